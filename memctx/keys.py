"""API keys: the credentials an HTTP client sends as `Authorization: Bearer mck_…`.

Owns: making a key (shown once; only its SHA-256 is stored), listing and revoking a user's keys,
and resolving a presented key to its user. These run on the owner's pool (the service role):
a key is resolved before anyone is known, and keys are made by an admin command. It knows
nothing of tokens or headers (`memctx/auth.py` does).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping
from uuid import UUID

from memctx.models import check_text
from memctx.sql import QUERIES

KEY_PREFIX = "mck_"
_SHOWN = len(KEY_PREFIX) + 6  # characters of a key kept to recognize it in a list


@dataclass(frozen=True)
class ApiKey:
    id: UUID
    user_id: UUID
    name: str | None
    prefix: str
    created_at: datetime
    revoked_at: datetime | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "ApiKey":
        return cls(**{k: row[k] for k in cls.__dataclass_fields__})

    def as_json(self) -> dict[str, Any]:
        return {"id": str(self.id), "user_id": str(self.user_id), "name": self.name, "prefix": self.prefix,
                "created_at": self.created_at.isoformat(),
                "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None}


@dataclass(frozen=True)
class NewKey:
    """A key just made: `secret` is the only time the plain key exists."""

    key: ApiKey
    secret: str


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def looks_like_key(token: str) -> bool:
    return token.startswith(KEY_PREFIX)


def create_key(pool, user_id: UUID, name: str | None = None) -> NewKey:
    if name is not None:
        check_text(name, "name")
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    with pool.connection() as conn:
        row = conn.execute(QUERIES["insert_api_key"], {"user_id": user_id, "name": name, "prefix": secret[:_SHOWN],
                                                       "key_hash": hash_key(secret)}).fetchone()
    return NewKey(ApiKey.from_row(row), secret)


def list_keys(pool, user_id: UUID) -> list[ApiKey]:
    with pool.connection() as conn:
        return [ApiKey.from_row(r) for r in conn.execute(QUERIES["list_api_keys"], {"user_id": user_id})]


def revoke_key(pool, key_id: UUID) -> ApiKey:
    """Revoke a key; LookupError when there is no such key, or it is already revoked."""
    with pool.connection() as conn:
        row = conn.execute(QUERIES["revoke_api_key"], {"id": key_id}).fetchone()
    if row is None:
        raise LookupError(f"no active API key {key_id}")
    return ApiKey.from_row(row)


def key_user(pool, secret: str) -> UUID | None:
    """The user of an active key, or None (unknown, revoked or malformed)."""
    if not looks_like_key(secret):
        return None
    with pool.connection() as conn:
        row = conn.execute(QUERIES["api_key_user"], {"key_hash": hash_key(secret)}).fetchone()
    return row["user_id"] if row else None
