"""The assembled service: settings → database, pool, token counter, embedder, summarizer, store,
web search.

Owns: startup (resolve the database, check it is migrated and holds the configured embedding
space — a mismatch is a clear error, never silent garbage) and shutdown. Entry points (CLI,
worker, API, MCP) build one `App` and pass its parts down.
"""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from uuid import UUID

from psycopg_pool import ConnectionPool

from memctx import db
from memctx.config import Settings
from memctx.embed import Embedder
from memctx.migrate import (EmbeddingSpaceMismatch, MigrationError, NotReady, check_migrated,
                            configure_embedding_space, migrate)
from memctx.providers import make_embedder, make_summarizer
from memctx.web import WebSearch
from memctx.store import MessageStore
from memctx.summarize.types import Summarizer
from memctx.tokens import TokenCounter, get_counter


# Users whose scoped App is kept for reuse: with it their assembler (and its caches) lives on
# between requests instead of being built again for each.
SCOPED_APPS = 1024


@dataclass(eq=False)  # one App is one set of connections: compared and hashed by identity
class App:
    settings: Settings
    url: str
    pool: ConnectionPool | db.CallerPool
    counter: TokenCounter
    embedder: Embedder
    store: MessageStore
    summarizer: Summarizer
    web: WebSearch | None = None  # the configured external search, shared by the users' scoped copies
    _scoped: "OrderedDict[UUID, App]" = field(default_factory=OrderedDict, init=False, repr=False)
    _scoped_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def for_user(self, user_id: UUID) -> "App":
        """This app acting as one end user: every query runs as role `authenticated` with the user's
        claims (`db.CallerPool`), so row-level security, not the caller's code, scopes it. The copy
        shares this app's connections; close this app, never the copy. The last SCOPED_APPS users'
        copies are kept and handed out again."""
        with self._scoped_lock:
            scoped = self._scoped.get(user_id)
            if scoped is not None:
                self._scoped.move_to_end(user_id)
                return scoped
        owner_pool = self.pool.pool if isinstance(self.pool, db.CallerPool) else self.pool
        pool = db.CallerPool(owner_pool, user_id)
        store = MessageStore(pool, self.counter, self.embedder, max_message_tokens=self.store.max_message_tokens,
                             copy=False)
        scoped = replace(self, pool=pool, store=store)
        with self._scoped_lock:
            scoped = self._scoped.setdefault(user_id, scoped)
            while len(self._scoped) > SCOPED_APPS:
                self._scoped.popitem(last=False)
        return scoped

    def close(self) -> None:
        close_summarizer = getattr(self.summarizer, "close", None)  # the LLM one holds an HTTP client
        if close_summarizer is not None:
            close_summarizer()
        self.pool.close()

    def __enter__(self) -> "App":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def prepare_database(settings: Settings, url: str | None = None, embedder: Embedder | None = None) -> list[str]:
    """Apply pending migrations and fix the embedding space; returns the migrations applied."""
    url = url or db.database_url(settings)
    embedder = embedder or make_embedder(settings)
    with db.connect(url, settings) as conn:
        applied = migrate(conn)
        configure_embedding_space(conn, embedder.name, embedder.dim)
    return [m.path.name for m in applied]


def check_database(conn, embedder: Embedder) -> None:
    check_migrated(conn)
    space = conn.execute("select model, dim from memctx.embedding_space").fetchone()
    if space is None:
        raise NotReady("no embedding space configured: run `memctx migrate`")
    if (space["model"], space["dim"]) != (embedder.name, embedder.dim):
        raise EmbeddingSpaceMismatch(
            f"database holds {space['dim']}-dimensional embeddings of model {space['model']}; "
            f"the configured embedder is {embedder.name} with {embedder.dim} dimensions")
    conn.commit()


def open_app(settings: Settings, *, auto_migrate: bool = False, embedder: Embedder | None = None) -> App:
    """Connect and check the database; with auto_migrate, migrate it first."""
    url = db.database_url(settings)
    embedder = embedder or make_embedder(settings)
    if auto_migrate:
        prepare_database(settings, url, embedder)
    pool = db.make_pool(url, settings)
    try:
        with pool.connection() as conn:
            check_database(conn, embedder)
    except (NotReady, EmbeddingSpaceMismatch, MigrationError):
        pool.close()
        raise
    counter = get_counter(settings.token_encoding)
    store = MessageStore(pool, counter, embedder, max_message_tokens=settings.max_message_tokens)
    app = App(settings=settings, url=url, pool=pool, counter=counter, embedder=embedder, store=store,
              summarizer=make_summarizer(settings, counter), web=WebSearch.from_settings(settings, counter))
    if settings.gc_freeze:
        freeze_startup_objects()
    return app


_freeze_lock = threading.Lock()
_frozen = False


def freeze_startup_objects() -> bool:
    """Once per process: collect, then move every object alive into the permanent generation
    (`gc.freeze`), where the cyclic collector never looks again; whether this call did it.

    A process that opens an App has imported its libraries: ~130,000 objects the collector
    tracks (functions, types, pydantic fields), which live as long as the process. Each full
    collection walked them all, in the middle of a request, and made the slowest calls
    (docs/BENCHMARKS.md, "Scale"). Frozen, a full collection walks only what came after. Objects
    frozen are still freed when their last reference
    goes; only a reference cycle among them would outlive its use, and the collection first
    clears those that exist."""
    global _frozen
    with _freeze_lock:
        if _frozen:
            return False
        _frozen = True
    gc.collect()
    gc.freeze()
    return True
