"""The external search cache in Postgres: a repeated question within the TTL is not searched again.

Owns: the fingerprint of a search and reading and writing `memctx.search_cache` (0010), per user.
Run through the caller's pool, row-level security keeps each user's rows to that user.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Sequence
from uuid import UUID

from psycopg.types.json import Jsonb

from memctx.search.types import Hit, WebResult
from memctx.sql import QUERIES


@dataclass(frozen=True)
class Cached:
    engine: str
    results: tuple[WebResult, ...]


def fingerprint(query: str, *, engines: Sequence[str], max_results: int, result_tokens: int) -> str:
    """SHA-256 of the anonymized query (case and spacing folded) and the settings that shape the answer."""
    key = json.dumps([" ".join(query.lower().split()), list(engines), max_results, result_tokens])
    return hashlib.sha256(key.encode()).hexdigest()


class SearchCache:
    def __init__(self, pool: Any, ttl_s: float) -> None:
        self.pool = pool
        self.ttl_s = ttl_s

    def get(self, user: UUID, key: str) -> Cached | None:
        with self.pool.connection() as conn:
            row = conn.execute(QUERIES["search_cache_get"], {"user_id": user, "fingerprint": key,
                                                             "ttl_s": self.ttl_s}).fetchone()
        if row is None:
            return None
        return Cached(row["engine"], tuple(WebResult.from_json(r) for r in row["cleaned"]))

    def put(self, user: UUID, key: str, query: str, engine: str, hits: Sequence[Hit],
            results: Sequence[WebResult], *, conversation: UUID | None = None) -> None:
        """Store an answer; one made for `conversation` only while it exists (under the user's
        lock, which forget_user takes too: a user forgotten meanwhile keeps no row)."""
        with self.pool.connection() as conn, conn.transaction():
            conn.execute(QUERIES["lock_user"], {"user_id": user})
            conn.execute(QUERIES["search_cache_put"], {
                "user_id": user, "fingerprint": key, "query": query, "engine": engine, "ttl_s": self.ttl_s,
                "conversation_id": conversation,
                "results": Jsonb([h.as_json() for h in hits]), "cleaned": Jsonb([r.as_json() for r in results])})
