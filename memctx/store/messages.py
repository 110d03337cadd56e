"""The message store: conversations and messages, scoped by user.

Owns: creating conversations, appending validated messages (token-counted, embedded, one
transaction per batch), reading them, deleting a conversation and forgetting a user. Every call
takes the acting user's id; another user's id is indistinguishable from an unknown one. Writes
take an optional open connection so that a caller (bulk ingest) can make many of them one
transaction; without one, each write is its own transaction. `fill_lexeme_counts` counts the
lexemes of messages stored before migration 0025 (across users; the idle worker calls it).
It does not summarize or search (`memctx.summarize`, `memctx.retrieve` do).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterator, Mapping, Sequence
from uuid import UUID

import numpy as np
import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from memctx.embed import Embedder
from memctx.models import Conversation, InvalidInput, Message, NewMessage, check_json, check_text
from memctx.sql import QUERIES
from memctx.tokens import TokenCounter

# Binary COPY column types of `copy_messages` (in its column order).
_COPY_TYPES = ["uuid", "uuid", "text", "jsonb", "text", "text", "int4", "vector", "timestamptz", "jsonb"]

# The single local user of a memctx without accounts (CLI, demo, benchmarks).
DEFAULT_USER = UUID("00000000-0000-4000-8000-000000000001")


class UnknownConversation(LookupError):
    """No such conversation for this user (it may belong to another user, or not exist)."""

    def __init__(self, conversation_id: UUID | str) -> None:
        super().__init__(f"unknown conversation {conversation_id}")


@dataclass(frozen=True)
class PreparedMessage:
    """A validated message with its token count, ready to embed and insert."""

    message: NewMessage
    token_count: int


class MessageStore:
    """Reads and writes conversations and messages through a connection pool."""

    def __init__(self, pool: ConnectionPool, counter: TokenCounter, embedder: Embedder | None,
                 *, max_message_tokens: int = 8_000, copy: bool = True) -> None:
        self.pool = pool
        self.counter = counter
        self.embedder = embedder
        self.max_message_tokens = max_message_tokens
        self.copy = copy  # COPY is fastest, but Postgres refuses it under row-level security

    @contextmanager
    def _connection(self, conn: psycopg.Connection | None) -> Iterator[psycopg.Connection]:
        """The caller's connection (inside its transaction), or one from the pool."""
        if conn is not None:
            yield conn
            return
        with self.pool.connection() as pooled:
            yield pooled

    # Conversations ---------------------------------------------------------------------------
    def create_conversation(self, user_id: UUID, *, external_id: str | None = None, title: str | None = None,
                            metadata: Mapping[str, Any] | None = None,
                            conn: psycopg.Connection | None = None) -> Conversation:
        """Create a conversation, or return the user's existing one with this external id."""
        for value, what in ((external_id, "external_id"), (title, "title")):
            if value is not None:
                check_text(value, what)
        check_json(dict(metadata or {}), "metadata")
        with self._connection(conn) as conn:
            row = conn.execute(QUERIES["upsert_conversation"], {
                "user_id": user_id, "external_id": external_id, "title": title,
                "metadata": Jsonb(dict(metadata or {}))}).fetchone()
            if row is None:  # lost a race with a concurrent creator: it exists now
                row = conn.execute(QUERIES["upsert_conversation"], {
                    "user_id": user_id, "external_id": external_id, "title": title,
                    "metadata": Jsonb(dict(metadata or {}))}).fetchone()
        return Conversation.from_row(row)

    def get_conversation(self, user_id: UUID, conversation_id: UUID) -> Conversation:
        with self.pool.connection() as conn:
            row = conn.execute(QUERIES["get_conversation"],
                               {"user_id": user_id, "conversation_id": conversation_id}).fetchone()
        if row is None:
            raise UnknownConversation(conversation_id)
        return Conversation.from_row(row)

    def find_conversation(self, user_id: UUID, name: str) -> Conversation:
        """A conversation of this user named by its memctx UUID or by its external id.

        A UUID is tried as the memctx id first, then as an external id (imported ids can be
        UUIDs). Unknown, or another user's: UnknownConversation.
        """
        check_text(name, "conversation")
        try:
            as_uuid: UUID | None = UUID(name)
        except ValueError:
            as_uuid = None
        with self.pool.connection() as conn:
            row = conn.execute(QUERIES["find_conversation"],
                               {"user_id": user_id, "as_uuid": as_uuid, "name": name}).fetchone()
        if row is None:
            raise UnknownConversation(name)
        return Conversation.from_row(row)

    def list_conversations(self, user_id: UUID, *, limit: int = 100, offset: int = 0) -> list[Conversation]:
        """The user's conversations, most recently active first."""
        with self.pool.connection() as conn:
            rows = conn.execute(QUERIES["list_conversations"],
                                {"user_id": user_id, "limit": limit, "offset": offset}).fetchall()
        return [Conversation.from_row(r) for r in rows]

    def delete_conversation(self, user_id: UUID, conversation_id: UUID) -> None:
        """Delete a conversation and everything derived from it."""
        with self.pool.connection() as conn:
            row = conn.execute(QUERIES["delete_conversation"],
                               {"user_id": user_id, "conversation_id": conversation_id}).fetchone()
        if row is None:
            raise UnknownConversation(conversation_id)

    def forget_user(self, user_id: UUID) -> dict[str, int]:
        """Delete every row of this user in every table; returns the counts deleted.

        Verified inside the same transaction: if any row of the user were left, nothing is
        deleted and an error is raised.
        """
        with self.pool.connection() as conn, conn.transaction():
            # the user's lock first: a search cache write in flight lands before, or sees the user gone
            conn.execute(QUERIES["lock_user"], {"user_id": user_id})
            deleted = dict(conn.execute(QUERIES["forget_user"], {"user_id": user_id}).fetchone())
            deleted.update(conn.execute(QUERIES["forget_user_keys"], {"user_id": user_id}).fetchone())
            left = conn.execute(QUERIES["user_row_counts"], {"user_id": user_id}).fetchone()
            if any(left.values()):
                raise RuntimeError(f"forget_user left rows behind: {dict(left)}")
        return {k: int(v) for k, v in deleted.items()}

    # Messages ----------------------------------------------------------------------------------
    def prepare(self, messages: Sequence[NewMessage], *, records: Sequence[str] | None = None) -> list[PreparedMessage]:
        """Count tokens and refuse messages over the limit, before anything is written."""
        counts = self.counter.count_many([m.text for m in messages])
        for i, (message, count) in enumerate(zip(messages, counts)):
            if count > self.max_message_tokens:
                record = records[i] if records else (message.external_id or f"message {i}")
                raise InvalidInput(f"message has {count} tokens, over the limit of {self.max_message_tokens}",
                                   record=record)
        return [PreparedMessage(m, c) for m, c in zip(messages, counts)]

    def append_messages(self, user_id: UUID, conversation_id: UUID, messages: Sequence[NewMessage | PreparedMessage],
                        *, embeddings: np.ndarray | None = None, embed: bool = True,
                        conn: psycopg.Connection | None = None) -> list[Message]:
        """Append messages in order, in one transaction; returns the stored messages.

        Messages whose external id is already stored in the conversation are skipped, so a
        re-run stores nothing new. Embeddings are computed here unless given (or embed=False,
        which leaves them to the background worker). Given `conn`, the append joins the
        caller's transaction (as a savepoint) and commits with it.
        """
        prepared = self.prepare([m.message if isinstance(m, PreparedMessage) else m for m in messages]) \
            if not all(isinstance(m, PreparedMessage) for m in messages) else list(messages)
        with self._connection(conn) as conn, conn.transaction():
            locked = conn.execute(QUERIES["lock_conversation_seq"],
                                  {"user_id": user_id, "conversation_id": conversation_id}).fetchone()
            if locked is None:
                raise UnknownConversation(conversation_id)
            keep = self._new_only(conn, user_id, conversation_id, prepared)
            if not keep:
                return []
            vectors = self._vectors([prepared[i] for i in keep], embeddings[keep] if embeddings is not None else None, embed)
            now = datetime.now(timezone.utc)
            self._insert(conn, [self._row(user_id, conversation_id, prepared[i],
                                          vectors[j] if vectors is not None else None, now) for j, i in enumerate(keep)])
            # Wakes the worker from this session (the trigger's NOTIFY may run on another node).
            conn.execute(QUERIES["notify_outbox"], {"conversation_ids": [conversation_id]})
            # The conversation row is locked: every row after last_seq is one of ours.
            rows = conn.execute(QUERIES["messages_after"], {"conversation_id": conversation_id, "user_id": user_id,
                                                            "after_seq": locked["last_seq"]}).fetchall()
        return [Message.from_row(r) for r in rows]

    def _insert(self, conn: psycopg.Connection, rows: list[tuple]) -> None:
        with conn.cursor() as cur:
            if not self.copy:
                cur.executemany(QUERIES["insert_message"], rows)
                return
            with cur.copy(QUERIES["copy_messages"]) as copy:
                copy.set_types(_COPY_TYPES)
                for row in rows:
                    copy.write_row(row)

    def _new_only(self, conn, user_id: UUID, conversation_id: UUID, prepared: list[PreparedMessage]) -> list[int]:
        external = [p.message.external_id for p in prepared if p.message.external_id is not None]
        if len(set(external)) != len(external):
            dup = next(e for e in external if external.count(e) > 1)
            raise InvalidInput(f"external id {dup!r} appears twice in one batch", record=dup)
        existing: set[str] = set()
        if external:
            existing = {r["external_id"] for r in conn.execute(
                QUERIES["existing_external_ids"],
                {"conversation_id": conversation_id, "user_id": user_id, "external_ids": external})}
        return [i for i, p in enumerate(prepared) if p.message.external_id not in existing]

    def stored_external_ids(self, user_id: UUID, conversation_id: UUID, external_ids: Sequence[str | None],
                            *, conn: psycopg.Connection | None = None) -> set[str]:
        """Which of these external ids the conversation already holds."""
        wanted = [e for e in external_ids if e is not None]
        if not wanted:
            return set()
        with self._connection(conn) as conn:
            self._require(conn, user_id, conversation_id)
            return {r["external_id"] for r in conn.execute(
                QUERIES["existing_external_ids"],
                {"conversation_id": conversation_id, "user_id": user_id, "external_ids": wanted})}

    @staticmethod
    def _require(conn, user_id: UUID, conversation_id: UUID) -> None:
        if conn.execute(QUERIES["get_conversation"],
                        {"user_id": user_id, "conversation_id": conversation_id}).fetchone() is None:
            raise UnknownConversation(conversation_id)

    def _vectors(self, prepared: list[PreparedMessage], given: np.ndarray | None, embed: bool) -> np.ndarray | None:
        if given is not None:
            return given
        if not embed or self.embedder is None:
            return None
        return self.embedder.embed([p.message.text for p in prepared])

    @staticmethod
    def _row(user_id: UUID, conversation_id: UUID, p: PreparedMessage, vector: np.ndarray | None,
             now: datetime) -> tuple:
        m = p.message
        return (conversation_id, user_id, m.role, Jsonb(m.blocks), m.text, m.external_id, p.token_count,
                vector, m.created_at or now, Jsonb(m.metadata))

    def list_messages(self, user_id: UUID, conversation_id: UUID, *, after_seq: int = 0,
                      limit: int | None = None) -> list[Message]:
        with self.pool.connection() as conn:
            rows = conn.execute(QUERIES["list_messages"], {
                "user_id": user_id, "conversation_id": conversation_id, "after_seq": after_seq,
                "limit": limit}).fetchall()
            if not rows:
                self._require(conn, user_id, conversation_id)
        return [Message.from_row(r) for r in rows]

    def last_message(self, user_id: UUID, conversation_id: UUID) -> Message | None:
        """The conversation's last message (None: it has none), read without locking it."""
        with self.pool.connection() as conn:
            row = conn.execute(QUERIES["last_message"],
                               {"user_id": user_id, "conversation_id": conversation_id}).fetchone()
        return Message.from_row(row) if row else None

    def last_messages(self, user_id: UUID, conversation_id: UUID, limit: int, *,
                      conn: psycopg.Connection | None = None) -> list[Message]:
        """The conversation's last `limit` messages, oldest first. Given a `conn` in a transaction,
        the conversation stays locked until it ends: nothing is appended in between, so a caller
        can decide what is new and append it (the proxy does)."""
        with self._connection(conn) as conn:
            locked = conn.execute(QUERIES["lock_conversation_seq"],
                                  {"user_id": user_id, "conversation_id": conversation_id}).fetchone()
            if locked is None:
                raise UnknownConversation(conversation_id)
            rows = conn.execute(QUERIES["list_messages"], {
                "user_id": user_id, "conversation_id": conversation_id,
                "after_seq": max(0, locked["last_seq"] - limit), "limit": limit}).fetchall()
        return [Message.from_row(r) for r in rows]

    def conversation_stats(self, user_id: UUID) -> list[dict[str, Any]]:
        with self.pool.connection() as conn:
            return [dict(r) for r in conn.execute(QUERIES["conversation_stats"], {"user_id": user_id})]


def fill_lexeme_counts(pool: ConnectionPool, *, batch: int = 500, batches: int | None = None) -> int:
    """Count the lexemes of messages stored before migration 0025, `batch` messages per
    transaction, until none is left or after `batches` batches; returns the messages counted.
    Their full-text search then reads the count in the row instead of the tsvector (the same
    BM25). Each row rewritten may cost an entry in every index of messages (436 s for a whole
    200,000-message table, then a VACUUM), so the worker does it while idle, one batch at a time
    (memctx.pipeline.dispatch.IdleBackfill); safe to interrupt, and to run in several processes."""
    counted, done = 0, 0
    while batches is None or done < batches:
        with pool.connection() as conn:
            user = conn.execute(QUERIES["user_without_lexemes"]).fetchone()
            n = 0 if user is None else conn.execute(QUERIES["fill_message_lexemes"], {
                "user_id": user["user_id"], "limit": batch}).rowcount
        counted, done = counted + n, done + 1
        if n == 0:
            break
    return counted
