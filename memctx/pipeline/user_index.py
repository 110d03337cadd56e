"""A heavy user's own HNSW index: built and dropped by the worker, never by a request.

Owns: `maintain`, which the worker's `UserIndexes` loop runs every sweep interval. A user whose
memory reaches `user_index_min_messages` messages gets a partial HNSW index on their messages
alone (`messages_hnsw_user_<user id, hex>`, the table-wide index's definition with
`where user_id = …`), built with CREATE INDEX CONCURRENTLY, so writes go on meanwhile. Postgres
then takes it for that user's user-wide dense pool (memctx.retrieve.search plans for it: the
statement of a scope past the exact scan is planned for its values, so the planner sees the user
id and proves the index's predicate), and the scan visits that user's vectors alone: no other
user's row is fetched to test a filter, and no scan of 100,000 codes ranks them
(docs/SCALING.md). An index whose user fell under half the threshold or is gone (forget_user) is
dropped the same way, as is one a failed build left invalid.

Every worker process runs the loop; a session advisory lock lets one build at a time (an index
build takes a core for a while: 16 s for 100,000 vectors here). Building needs the role that
owns memctx.messages (as migrations do), not a superuser; a role that may not build logs it once
per pass and searches keep the quantized plan.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from uuid import UUID

import psycopg
from psycopg import sql

from memctx import db, metrics
from memctx.app import App
from memctx.pipeline.dispatch import _Loop

log = logging.getLogger(__name__)

PREFIX = "messages_hnsw_user_"
TABLE_INDEX = "memctx.messages_embedding_hnsw"
# One key for every builder (pg_try_advisory_lock's bigint): 'memctx user index'
LOCK_KEY = 0x6D656D6374785549


def index_name(user_id: UUID) -> str:
    """The name of a user's own index (51 characters: within Postgres's 63)."""
    return PREFIX + user_id.hex


@dataclass
class Changes:
    """What one pass did: users whose index was built or dropped, and the build's seconds."""

    built: list[UUID] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    locked_out: bool = False  # another process holds the builders' lock


def maintain(app: App, *, limit: int = 1) -> Changes:
    """Build the missing indexes of users at the threshold (at most `limit` per pass, largest
    user first) and drop those no longer wanted. A no-op when `user_index_min_messages` is 0."""
    settings = app.settings
    changes = Changes()
    with db.connect(app.url, settings, autocommit=True) as conn:
        if not conn.execute("select pg_try_advisory_lock(%s) as ok", (LOCK_KEY,)).fetchone()["ok"]:
            changes.locked_out = True
            return changes
        try:
            if conn.execute("select to_regclass(%s) is null as missing", (TABLE_INDEX,)).fetchone()["missing"]:
                return changes  # no table-wide HNSW index to copy (vectors past its 2,000 dimensions)
            _pass(conn, settings, changes, limit)
        finally:
            conn.execute("select pg_advisory_unlock(%s)", (LOCK_KEY,))
    return changes


def _pass(conn: psycopg.Connection, settings, changes: Changes, limit: int) -> None:
    threshold = settings.user_index_min_messages
    existing = {r["name"]: r["valid"] for r in conn.execute(
        "select c.relname as name, i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid "
        " where i.indrelid = 'memctx.messages'::regclass and c.relname like %s", (PREFIX + "%",))}
    # users at half the threshold or more: an index is kept down to half (no rebuilding one for a
    # user who hovers at the threshold), built from the threshold up
    sizes = {} if not threshold else {index_name(r["user_id"]): (r["user_id"], r["n"]) for r in conn.execute(
        "select c.user_id, sum(c.message_count)::bigint as n from memctx.conversations c group by c.user_id "
        "having sum(c.message_count) >= %s", (max(1, threshold // 2),))}
    for name, valid in existing.items():
        if not valid or name not in sizes:
            conn.execute(sql.SQL("drop index concurrently if exists memctx.{}").format(sql.Identifier(name)))
            changes.dropped.append(name)
            metrics.USER_INDEXES.labels(change="dropped").inc()
    wanted = sorted(((size, user) for name, (user, size) in sizes.items()
                     if size >= threshold and not existing.get(name)), reverse=True)
    for size, user in wanted[:limit]:
        _build(conn, settings, user, size, changes)


def _build(conn: psycopg.Connection, settings, user: UUID, size: int, changes: Changes) -> None:
    name = index_name(user)
    # The table-wide index's own definition (access method, operator class, m, ef_construction),
    # renamed and restricted to the user.
    definition = conn.execute("select pg_get_indexdef(%s::regclass) as d", (TABLE_INDEX,)).fetchone()["d"]
    _, sep, tail = definition.partition(" ON ")
    if not sep or " WHERE " in tail:
        raise RuntimeError(f"unexpected definition of {TABLE_INDEX}: {definition}")
    statement = sql.SQL("CREATE INDEX CONCURRENTLY IF NOT EXISTS {} ON {} WHERE user_id = {}").format(
        sql.Identifier(name), sql.SQL(tail), sql.Literal(str(user)))
    conn.execute("select set_config('maintenance_work_mem', %s, false), set_config('statement_timeout', '0', false)",
                 (settings.user_index_maintenance_work_mem,))
    started = conn.execute("select clock_timestamp() as t").fetchone()["t"]
    try:
        conn.execute(statement)
    except psycopg.Error as exc:
        metrics.FAILURES.labels(kind="user_index").inc()
        log.warning("could not build %s for user %s (%s messages): %s", name, user, size, exc)
        # a failed concurrent build leaves an invalid index behind: the next pass drops it
        return
    finally:
        conn.execute("reset maintenance_work_mem; reset statement_timeout")
    elapsed = conn.execute("select extract(epoch from clock_timestamp() - %s)::float8 as s", (started,)).fetchone()["s"]
    changes.built.append(user)
    changes.seconds += elapsed
    metrics.USER_INDEXES.labels(change="built").inc()
    log.info("built %s for user %s (%s messages) in %.1f s", name, user, size, elapsed)


class UserIndexes(_Loop):
    """Runs `maintain` every sweep interval, in the background of a worker process; a failure is
    logged and counted, and the next pass tries again."""

    thread_name = "memctx-user-indexes"

    def __init__(self, app: App) -> None:
        super().__init__()
        self.app = app

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                maintain(self.app)
            except Exception:
                metrics.FAILURES.labels(kind="user_index").inc()
                log.exception("user index maintenance failed")
            self.stopping.wait(self.app.settings.sweep_interval_s)
