"""What the HTTP door records: the context request log and the proxy's idempotency keys.

Owns: writing one `memctx.context_requests` row per context or proxy call (tokens used against
the whole conversation's tokens, latency per stage, sources by kind — never message text) with
the retention prune, and claiming and completing an Idempotency-Key. Every function runs on the
connection or pool it is given: the API passes the caller's (row-level security as that user).
It does not build contexts or call upstreams.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Mapping
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from memctx.sql import QUERIES
from memctx.tokens import PER_MESSAGE

# Tokens a stored message costs in a chat request beyond its content: the per-message overhead
# and its role (every role name is one token).
STORED_MESSAGE_OVERHEAD = PER_MESSAGE + 1


@dataclass(frozen=True)
class ContextRequest:
    """One context or proxy call, as the log keeps it (`WorkingContext.log_entry` makes one)."""

    user_id: UUID
    conversation_id: UUID
    kind: Literal["context", "proxy", "shadow"]  # shadow: a proxy call in shadow mode (api/shadow.py)
    token_budget: int
    tokens_used: int
    fixed_tokens: int  # the system prompt, the reply priming and an unstored query
    timings_ms: dict[str, float] = field(default_factory=dict)
    sources: dict[str, int] = field(default_factory=dict)
    model: str | None = None
    through_seq: int | None = None  # the conversation's history up to here; None = all of it
    upstream_status: int | None = None


@dataclass(frozen=True)
class LoggedRequest:
    id: int
    tokens_used: int
    full_history_tokens: int

    @property
    def tokens_saved(self) -> int:
        """The whole history's tokens less those sent: below zero when the context added more
        (memories of other conversations, web results) than it left out."""
        return self.full_history_tokens - self.tokens_used


def log_request(conn: psycopg.Connection, request: ContextRequest, *, retention_days: float,
                own_transaction: bool = False) -> LoggedRequest:
    """Insert the log row (and prune the user's rows older than `retention_days`). With
    `own_transaction` (the transaction writes nothing else), its commit does not wait for the disk."""
    if own_transaction:
        conn.execute(QUERIES["commit_without_flush_wait"])
    row = conn.execute(QUERIES["log_context_request"], {
        "user_id": request.user_id, "conversation_id": request.conversation_id, "kind": request.kind,
        "model": request.model, "token_budget": request.token_budget, "tokens_used": request.tokens_used,
        "fixed_tokens": request.fixed_tokens, "per_message": STORED_MESSAGE_OVERHEAD,
        "through_seq": request.through_seq, "timings_ms": Jsonb(request.timings_ms),
        "sources": Jsonb(request.sources), "upstream_status": request.upstream_status,
        "retention_s": retention_days * 86_400}).fetchone()
    return LoggedRequest(id=row["id"], tokens_used=row["tokens_used"], full_history_tokens=row["full_history_tokens"])


@dataclass(frozen=True)
class IdempotencyKey:
    """A key's state: `created` by this request, or left by an earlier one (done when completed)."""

    conversation_id: UUID
    request_hash: str
    created: bool
    completed_at: datetime | None
    response: dict[str, Any] | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "IdempotencyKey":
        return cls(**{k: row[k] for k in cls.__dataclass_fields__})


def claim_key(conn: psycopg.Connection, *, user_id: UUID, key: str, conversation_id: UUID, request_hash: str,
              keep_hours: float) -> IdempotencyKey:
    """The key's row, created now if it is new (the user's expired keys are pruned first)."""
    params = {"user_id": user_id, "key": key, "conversation_id": conversation_id, "request_hash": request_hash,
              "keep_s": keep_hours * 3600}
    row = conn.execute(QUERIES["claim_idempotency_key"], params).fetchone()
    if row is None:  # a concurrent first claim committed meanwhile: it is visible now
        row = conn.execute(QUERIES["claim_idempotency_key"], params).fetchone()
    return IdempotencyKey.from_row(row)


def complete_key(conn: psycopg.Connection, *, user_id: UUID, key: str, response: Mapping[str, Any]) -> bool:
    """Record the reply of a key; False when another request completed it first."""
    return conn.execute(QUERIES["complete_idempotency_key"],
                        {"user_id": user_id, "key": key, "response": Jsonb(dict(response))}).fetchone() is not None
