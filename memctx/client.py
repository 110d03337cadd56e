"""The library's front door for a chat handler: connect, get the context, remember a turn, search,
forget.

Owns: `connect` (a Postgres DSN) and `connect_embedded` (the embedded Postgres, started here if it
is not running), and `Memctx`, whose every call names its user and runs as that user under
row-level security (`App.for_user`), with the options every door has: `scope`, `as_of` (the
moment asked; now unless given) and `budget`. Either order of a turn is safe: ask with the new
message and then remember it with the reply, or remember it first and then ask with the same
text (the context then leaves the stored copy out, so the model reads it once). It builds nothing
itself: contexts are `memctx.assemble`'s, memory search `memctx.retrieve`'s, writes
`memctx.store`'s.
"""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence
from uuid import UUID

import psycopg

from memctx import db
from memctx.app import App, open_app
from memctx.assemble import WorkingContext, assembler_for
from memctx.config import Settings
from memctx.models import InvalidInput, Message, NewMessage, check_query
from memctx.retrieve.types import Memory
from memctx.store import DEFAULT_USER, UnknownConversation
from memctx.store.requests import log_request

Scope = Literal["conversation", "user"]
UserId = UUID | str
ConversationRef = UUID | str

# The user the CLI, the demo and `scripts/run.sh` store under when none is named: name it to read
# their conversations (`user=memctx.LOCAL_USER`).
LOCAL_USER: UUID = DEFAULT_USER

# What `remember` reads of a message mapping besides its role and content.
_MESSAGE_KEYS = frozenset({"role", "content", "created_at", "external_id", "metadata"})


def connect(dsn: str, *, migrate: bool = False, settings: Settings | None = None) -> "Memctx":
    """memctx on the Postgres at `dsn` (plain Postgres with pgvector, or Supabase).

    The database must be migrated (`memctx migrate`, or `migrate=True` here, which applies what is
    pending under an advisory lock). `settings` defaults to `Settings()`, the `MEMCTX_*`
    environment; `dsn` wins over its `database_url`."""
    if not dsn:
        raise ValueError("connect() needs a Postgres DSN; connect_embedded() runs memctx's own Postgres")
    base = settings if settings is not None else Settings()
    return Memctx(open_app(base.model_copy(update={"database_url": dsn}), auto_migrate=migrate))


def connect_embedded(home: str | os.PathLike[str] | None = None, *, migrate: bool = True,
                     settings: Settings | None = None) -> "Memctx":
    """memctx on its embedded PostgreSQL 18 with pgvector, under `home` (default `MEMCTX_HOME`, else
    the user's data directory), which this call starts if it is not running, and migrates.

    The server is a separate process: it keeps running after `close()`, so that the next start is
    instant and the CLI (`memctx demo`, `memctx worker`) shares it. `close(stop_server=True)` or
    `memctx db stop` stops it; `memctx db status` says where it runs."""
    base = settings if settings is not None else Settings()
    update: dict[str, Any] = {"database_url": None}
    if home is not None:
        update["home"] = Path(home).expanduser()
    configured = base.model_copy(update=update)
    return Memctx(open_app(configured, auto_migrate=migrate), embedded=configured)


class Memctx:
    """A chat handler's memory: one per process, safe to share between threads. Open it with
    `memctx.connect(dsn)` or `memctx.connect_embedded()`; close it (or use it in a `with` block).

    Users are UUIDs (Supabase's `auth.uid()`), named on every call. Conversations are named by
    memctx's UUID or by your own id (any other string), which is created on first use."""

    def __init__(self, app: App, *, embedded: Settings | None = None) -> None:
        self._app = app
        self._embedded = embedded  # the settings the embedded server was started with

    @property
    def settings(self) -> Settings:
        return self._app.settings

    @property
    def dsn(self) -> str:
        """The DSN memctx connected to (the embedded server's, when embedded)."""
        return self._app.url

    # The context ---------------------------------------------------------------------------
    def context(self, message: str, *, user: UserId, conversation: ConversationRef, budget: int = 2000,
                scope: Scope | None = None, as_of: datetime | None = None,
                system_prompt: str | None = None) -> WorkingContext:
        """The chat messages to send to the model for the user's new `message`, within `budget`
        tokens (system prompt and `message` included): `.messages`, with `.sources` (where every
        line came from), `.sections` and what was `.dropped` or `.compressed`.

        `scope`: "user" draws memories from all of the user's conversations, "conversation" from
        this one only (default: `MEMCTX_CONTEXT_SCOPE`, "user"). `as_of`: the moment the message is
        asked, which resolves its relative dates ("last weekend"); now unless given. If the
        conversation's last stored message is this same user message (remembered before asking),
        the context leaves that copy out: the model reads the message once, at the end."""
        owner = _user_id(user)
        check_query(message, "message")
        if budget < 1:
            raise InvalidInput(f"budget must be a positive number of tokens, got {budget}")
        app = self._app.for_user(owner)
        conv = _conversation(app, owner, conversation)
        stored = _stored_query(app, owner, conv, message)
        assembler = assembler_for(app)
        options = replace(assembler.options, scope=scope or self.settings.context_scope)
        wc = assembler.get_working_context(owner, conv, message, budget, system_prompt=system_prompt,
                                           options=options, now=as_of or datetime.now(timezone.utc),
                                           stored_query=stored.id if stored else None)
        _log_context(app, owner, conv, wc, stored)
        return wc

    # Writing -------------------------------------------------------------------------------
    def remember(self, messages: Sequence[Mapping[str, Any] | NewMessage], *, user: UserId,
                 conversation: ConversationRef, embed: bool = True) -> list[Message]:
        """Store messages in order, in one transaction: a turn is the user's message and the reply,
        `[{"role": "user", "content": ...}, {"role": "assistant", "content": ...}]`. A message is
        `{"role", "content"}` (a string, or typed blocks: text, image, tool_call, tool_result),
        optionally with `created_at` (a datetime or ISO 8601 text; now unless given), `external_id` (your id: a
        message whose id the conversation holds is not stored again) and `metadata` (e.g.
        `{"speaker": "Ana"}`). Embedded here unless `embed=False` (then by `memctx worker`);
        summaries and the board are the worker's. Returns the stored messages."""
        owner = _user_id(user)
        built = [_new_message(m, i) for i, m in enumerate(messages)]
        if not built:
            raise InvalidInput("remember() needs at least one message")
        app = self._app.for_user(owner)
        return app.store.append_messages(owner, _conversation(app, owner, conversation), built, embed=embed)

    # Reading -------------------------------------------------------------------------------
    def search(self, query: str, *, user: UserId, conversation: ConversationRef | None = None, limit: int = 10,
               as_of: datetime | None = None) -> list[Memory]:
        """The user's memories for `query`, best first: messages (with the turn they pair with) and
        summaries, each with its score and why it matched. In one conversation when one is named,
        else across all of the user's. `as_of` resolves relative dates as in `context`."""
        owner = _user_id(user)
        check_query(query)
        if limit < 1:
            raise InvalidInput(f"limit must be at least 1, got {limit}")
        app = self._app.for_user(owner)
        conv = _conversation(app, owner, conversation, create=False) if conversation is not None else None
        return assembler_for(app).search.search(owner, query, conv, limit=limit,
                                                now=as_of or datetime.now(timezone.utc))

    # Forgetting ----------------------------------------------------------------------------
    def forget(self, *, user: UserId, conversation: ConversationRef) -> None:
        """Delete one conversation of the user and everything derived from it (summaries, board,
        passages, request log)."""
        owner = _user_id(user)
        app = self._app.for_user(owner)
        app.store.delete_conversation(owner, _conversation(app, owner, conversation, create=False))

    def forget_user(self, user: UserId) -> dict[str, int]:
        """Delete every row of the user, in every table, in one transaction; the counts deleted."""
        owner = _user_id(user)
        return self._app.for_user(owner).store.forget_user(owner)

    # Lifetime ------------------------------------------------------------------------------
    def close(self, *, stop_server: bool = False) -> None:
        """Close the connections. With `stop_server` (embedded only), stop the embedded Postgres
        too, for every process using it."""
        self._app.close()
        if stop_server:
            if self._embedded is None:
                raise ValueError("stop_server applies to connect_embedded(); this Postgres is not memctx's")
            db.stop_embedded(self._embedded)

    def __enter__(self) -> "Memctx":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _user_id(user: UserId) -> UUID:
    if isinstance(user, UUID):
        return user
    if isinstance(user, str):
        try:
            return UUID(user)
        except ValueError:
            pass
    raise InvalidInput(f"user must be a UUID (as Supabase's auth.uid()), got {user!r}: map your own ids to "
                       "UUIDs, e.g. uuid.uuid5(your_namespace, str(your_id))")


def _conversation(app: App, user: UUID, name: ConversationRef, *, create: bool = True) -> UUID:
    """The user's conversation by memctx UUID or by the caller's own id; an unknown own id is created
    (`create`), an unknown UUID is UnknownConversation (perhaps another user's)."""
    if isinstance(name, UUID):
        return app.store.get_conversation(user, name).id
    if not isinstance(name, str):
        raise InvalidInput(f"conversation must be a UUID or your own id (a string), got {type(name).__name__}")
    try:
        UUID(name)
    except ValueError:
        if create:
            return app.store.create_conversation(user, external_id=name).id
    return app.store.find_conversation(user, name).id


def _stored_query(app: App, user: UUID, conversation: UUID, message: str) -> Message | None:
    """The conversation's last message when it is this user message, stored before asking."""
    last = app.store.last_message(user, conversation)
    return last if last is not None and last.role == "user" and last.text == message.strip() else None


def _new_message(message: Mapping[str, Any] | NewMessage, index: int) -> NewMessage:
    if isinstance(message, NewMessage):
        return message
    record = f"message {index}"
    if not isinstance(message, Mapping) or "role" not in message or "content" not in message:
        raise InvalidInput('a message is a mapping with "role" and "content"', record=record)
    unread = sorted(set(message) - _MESSAGE_KEYS)
    if unread:
        raise InvalidInput(f"remember() does not read {', '.join(map(repr, unread))}: it reads "
                           f"{', '.join(sorted(_MESSAGE_KEYS))} (a tool call is a content block: "
                           '{"type": "tool_call", "name": ..., "arguments": ...})', record=record)
    created_at = message.get("created_at")
    if isinstance(created_at, str):
        try:
            created_at = datetime.fromisoformat(created_at)
        except ValueError:
            raise InvalidInput(f"created_at {created_at!r} is not an ISO 8601 date", record=record) from None
    elif created_at is not None and not isinstance(created_at, datetime):
        raise InvalidInput(f"created_at must be a datetime or an ISO 8601 string, got {type(created_at).__name__}",
                           record=record)
    return NewMessage.build(message["role"], message["content"], external_id=message.get("external_id"),
                            created_at=created_at, metadata=message.get("metadata"), record=record)


def _log_context(app: App, user: UUID, conversation: UUID, wc: WorkingContext, stored: Message | None) -> None:
    """The call's row in the request log (tokens sent against the whole history's; no text), as the
    HTTP door writes it, so the dashboards count library calls too."""
    entry = wc.log_entry(app.counter, user_id=user, conversation_id=conversation, kind="context",
                         query_stored_at=stored.seq if stored else None)
    try:
        with app.pool.connection() as conn:
            log_request(conn, entry, retention_days=app.settings.request_log_retention_days, own_transaction=True)
    except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ForeignKeyViolation):
        raise UnknownConversation(conversation) from None  # deleted while its context was built
