"""What a person's dashboard reads: the summary-board page's queries, over the caller's pool.

Owns: the conversation overview with token savings and pending work, a conversation's summary
tree (live summaries, what they folded, the messages they cover), the messages board items came
from, the last working contexts and a cheap version that moves whenever the worker writes.
Read-only; every function runs on the pool it is given (the page passes the caller's, so
row-level security scopes each row). Writing (summarize, edit, close) stays in memctx.pipeline.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, Sequence
from uuid import UUID

from psycopg_pool import ConnectionPool

from memctx.models import Message
from memctx.sql import QUERIES

# Messages the tree shows under its summaries, at most: a longer history links to the API's pages.
TREE_MESSAGES_MAX = 2000


@dataclass(frozen=True)
class ConversationOverview:
    """One conversation as the dashboard lists it."""

    id: UUID
    external_id: str | None
    title: str | None
    created_at: datetime
    last_message_at: datetime | None
    closed_at: datetime | None
    message_count: int
    message_tokens: int
    live_summaries: int
    summaries_by_level: dict[str, int]
    board_updated_at: datetime | None
    messages_since_board: int
    requests: int
    tokens_used: int
    full_history_tokens: int
    tokens_saved: int
    pending: int

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "ConversationOverview":
        return cls(**{k: row[k] for k in cls.__dataclass_fields__})

    @property
    def saved_share(self) -> float | None:
        return 1 - self.tokens_used / self.full_history_tokens if self.full_history_tokens else None


@dataclass(frozen=True)
class TreeNode:
    """A summary in the tree: the summaries it folded (`children`) or the messages it covers."""

    id: UUID
    level: int
    is_master: bool
    content: str
    source_kind: str
    first_seq: int
    last_seq: int
    token_count: int | None
    edited: bool
    live: bool
    children: tuple["TreeNode", ...] = ()
    messages: tuple[Message, ...] = ()


@dataclass(frozen=True)
class ContextUse:
    """One logged working context (or proxy call): what it cost and what it was made of."""

    created_at: datetime
    kind: str
    model: str | None
    token_budget: int
    tokens_used: int
    full_history_tokens: int
    sources: dict[str, int] = field(default_factory=dict)
    total_ms: float | None = None
    upstream_status: int | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "ContextUse":
        return cls(**{k: row[k] for k in cls.__dataclass_fields__})


def conversations(pool: ConnectionPool, user_id: UUID, *, conversation_id: UUID | None = None,
                  limit: int = 200) -> list[ConversationOverview]:
    """The user's conversations, most recently active first (or only `conversation_id`)."""
    with pool.connection() as conn:
        rows = conn.execute(QUERIES["dashboard_conversations"], {
            "user_id": user_id, "conversation_id": conversation_id, "limit": limit}).fetchall()
    return [ConversationOverview.from_row(r) for r in rows]


def summary_tree(pool: ConnectionPool, user_id: UUID, conversation_id: UUID) -> list[TreeNode]:
    """The live summaries in chain order (master first, then high levels to low), each with the
    summaries it folded down to the messages the lowest ones cover."""
    key = {"user_id": user_id, "conversation_id": conversation_id}
    with pool.connection() as conn:
        rows = conn.execute(QUERIES["summary_tree"], key).fetchall()
        leaves = [r for r in rows if r["source_kind"] != "summary"]
        messages = conn.execute(QUERIES["messages_in_range"], {
            **key, "first_seq": min((r["first_seq"] for r in leaves), default=0),
            "last_seq": max((r["last_seq"] for r in leaves), default=-1),
            "limit": TREE_MESSAGES_MAX}).fetchall() if leaves else []
    by_seq = [Message.from_row(m) for m in messages]
    seqs = [m.seq for m in by_seq]  # ascending: the query orders by seq
    children: dict[UUID | None, list[Mapping[str, Any]]] = {}
    for row in rows:
        children.setdefault(row["parent_id"], []).append(row)

    def build(row: Mapping[str, Any], seen: frozenset[UUID]) -> TreeNode:
        kids = [build(k, seen | {row["id"]}) for k in children.get(row["id"], []) if k["id"] not in seen]
        covered = () if row["source_kind"] == "summary" else tuple(
            by_seq[bisect_left(seqs, row["first_seq"]):bisect_right(seqs, row["last_seq"])])
        return TreeNode(id=row["id"], level=row["level"], is_master=row["is_master"], content=row["content"],
                        source_kind=row["source_kind"], first_seq=row["first_seq"], last_seq=row["last_seq"],
                        token_count=row["token_count"], edited=row["edited"], live=row["live"],
                        children=tuple(kids), messages=covered)

    return [build(r, frozenset()) for r in children.get(None, [])]


def messages_by_ids(pool: ConnectionPool, user_id: UUID, conversation_id: UUID, ids: Sequence[UUID]) -> dict[UUID, Message]:
    """The conversation's messages among `ids` (the sources of board items), by id."""
    if not ids:
        return {}
    with pool.connection() as conn:
        rows = conn.execute(QUERIES["messages_by_ids"], {
            "user_id": user_id, "conversation_id": conversation_id, "ids": list(ids)}).fetchall()
    return {r["id"]: Message.from_row(r) for r in rows}


def recent_contexts(pool: ConnectionPool, user_id: UUID, conversation_id: UUID, *, limit: int = 5) -> list[ContextUse]:
    """The last `limit` working contexts built for the conversation, newest first."""
    with pool.connection() as conn:
        rows = conn.execute(QUERIES["recent_context_requests"], {
            "user_id": user_id, "conversation_id": conversation_id, "limit": limit}).fetchall()
    return [ContextUse.from_row(r) for r in rows]


def version(pool: ConnectionPool, user_id: UUID, conversation_id: UUID) -> dict[str, Any] | None:
    """`{"version": str, "pending": int}`: the version changes whenever a message, summary or the
    board does; `pending` counts the worker's unprocessed outbox rows for messages the board does
    not cover yet (summarize now leaves none). None for an unknown conversation."""
    with pool.connection() as conn:
        row = conn.execute(QUERIES["conversation_version"],
                           {"user_id": user_id, "conversation_id": conversation_id}).fetchone()
    if row is None:
        return None
    stamp = "|".join(str(row[k]) for k in ("last_seq", "closed_at", "board_at", "summaries_at"))
    return {"version": stamp, "pending": row["pending"]}
