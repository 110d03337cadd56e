"""The proxy's shadow run as the database keeps it: a conversation's proxy mode, and what each
shadow call recorded beside its request-log row.

Owns: reading and setting `conversations.proxy_mode` ('live', 'shadow', or none: the server's
MEMCTX_PROXY_MODE), writing one `memctx.shadow_requests` row (what the client sent against what
memctx would have sent, the context itself included), and reading a conversation's records back
for the page. Every function runs on the connection or pool it is given: the API passes the
caller's, so row-level security scopes each row. It does not decide a request's mode or compare
messages (api/shadow.py does).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Mapping, Sequence
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from memctx.sql import QUERIES
from memctx.store.messages import UnknownConversation

ProxyMode = Literal["live", "shadow"]
PROXY_MODES: tuple[ProxyMode, ...] = ("live", "shadow")


def context_text(messages: Sequence[Mapping[str, Any]]) -> bytes:
    """The JSON text of a context's messages, as its digest is taken of it."""
    return json.dumps(list(messages), ensure_ascii=False, separators=(",", ":")).encode()


@dataclass(frozen=True)
class ShadowRecord:
    """One shadow call: the client's messages against the ones memctx would have sent."""

    client_tokens: int
    context_tokens: int
    history_messages: int  # the client's messages before its last user message, with text
    history_kept: int  # of those, the ones the context holds whole
    context: list[dict[str, Any]]  # the messages live mode sends

    @property
    def context_sha256(self) -> str:
        return hashlib.sha256(context_text(self.context)).hexdigest()


@dataclass(frozen=True)
class ShadowPoint:
    """One recorded shadow call, as the page plots it."""

    created_at: datetime
    client_tokens: int
    context_tokens: int
    history_messages: int
    history_kept: int

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "ShadowPoint":
        return cls(**{k: row[k] for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class ShadowTotals:
    requests: int
    client_tokens: int
    context_tokens: int
    history_messages: int
    history_kept: int

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "ShadowTotals":
        return cls(**{k: int(row[k]) for k in cls.__dataclass_fields__})

    @property
    def context_share(self) -> float | None:
        return self.context_tokens / self.client_tokens if self.client_tokens else None

    @property
    def kept_share(self) -> float | None:
        return self.history_kept / self.history_messages if self.history_messages else None


def record(conn: psycopg.Connection, *, request_id: int, user_id: UUID, conversation_id: UUID,
           shadow: ShadowRecord) -> None:
    """The shadow row of a logged call, in the caller's transaction (beside the log row)."""
    conn.execute(QUERIES["record_shadow_request"], {
        "request_id": request_id, "user_id": user_id, "conversation_id": conversation_id,
        "client_tokens": shadow.client_tokens, "context_tokens": shadow.context_tokens,
        "history_messages": shadow.history_messages, "history_kept": shadow.history_kept,
        "context": Jsonb(shadow.context), "context_sha256": shadow.context_sha256})


def proxy_mode(pool, user_id: UUID, conversation_id: UUID) -> ProxyMode | None:
    """The conversation's own mode; None: it follows the server's."""
    with pool.connection() as conn:
        row = conn.execute(QUERIES["conversation_proxy_mode"],
                           {"user_id": user_id, "conversation_id": conversation_id}).fetchone()
    return row["proxy_mode"] if row else None


def set_proxy_mode(pool, user_id: UUID, conversation_id: UUID, mode: ProxyMode | None) -> ProxyMode | None:
    """Set (None: clear) the conversation's mode; UnknownConversation when it is not the user's."""
    with pool.connection() as conn:
        row = conn.execute(QUERIES["set_proxy_mode"], {"user_id": user_id, "conversation_id": conversation_id,
                                                       "mode": mode}).fetchone()
    if row is None:
        raise UnknownConversation(conversation_id)
    return row["proxy_mode"]


def series(pool, user_id: UUID, conversation_id: UUID, *, limit: int = 500) -> list[ShadowPoint]:
    """The conversation's last `limit` shadow calls, oldest first."""
    with pool.connection() as conn:
        rows = conn.execute(QUERIES["shadow_series"], {"user_id": user_id, "conversation_id": conversation_id,
                                                       "limit": limit}).fetchall()
    return [ShadowPoint.from_row(r) for r in rows]


def totals(pool, user_id: UUID, conversation_id: UUID) -> ShadowTotals:
    """Every shadow call of the conversation, summed (from the `shadow_comparison` view)."""
    with pool.connection() as conn:
        row = conn.execute(QUERIES["shadow_totals"], {"user_id": user_id, "conversation_id": conversation_id}
                           ).fetchone()
    return ShadowTotals.from_row(row)
