"""The external search cache in Postgres: a repeated question within the TTL is not searched again.

Owns: the fingerprint of a search and reading and writing `memctx.search_cache` (0010), per user.
Run through the caller's pool, row-level security keeps each user's rows to that user. A miss
claims its key before the search runs and the answer fills the claim in (memctx/sql/search.sql):
a user forgotten while a search runs keeps no row, whichever door searched.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Sequence
from uuid import UUID

from psycopg.types.json import Jsonb

from memctx.web.types import Hit, WebResult
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

    def lookup(self, user: UUID, key: str, query: str, *, conversation: UUID | None = None) -> Cached | None:
        """The answer cached under `key` within the TTL; on a miss, the key claimed for the search
        about to run (for `conversation` only while it exists), under the user's lock, which
        forget_user takes too: `put` can only fill in a claim, and forgetting the user deletes it."""
        with self.pool.connection() as conn, conn.transaction():
            row = conn.execute(QUERIES["search_cache_get"], {"user_id": user, "fingerprint": key,
                                                             "ttl_s": self.ttl_s}).fetchone()
            if row is not None:
                return Cached(row["engine"], tuple(WebResult.from_json(r) for r in row["cleaned"]))
            conn.execute(QUERIES["lock_user"], {"user_id": user})
            conn.execute(QUERIES["search_cache_claim"], {"user_id": user, "fingerprint": key, "query": query,
                                                         "ttl_s": self.ttl_s, "conversation_id": conversation})
        return None

    def put(self, user: UUID, key: str, query: str, engine: str, hits: Sequence[Hit],
            results: Sequence[WebResult]) -> None:
        """Store an answer in the claim `lookup` made; without it (the user forgotten meanwhile),
        nothing."""
        with self.pool.connection() as conn:
            conn.execute(QUERIES["search_cache_put"], {
                "user_id": user, "fingerprint": key, "query": query, "engine": engine,
                "results": Jsonb([h.as_json() for h in hits]), "cleaned": Jsonb([r.as_json() for r in results])})

    def release(self, user: UUID, key: str) -> None:
        """Drop the claim of a search that found nothing to store."""
        with self.pool.connection() as conn:
            conn.execute(QUERIES["search_cache_release"], {"user_id": user, "fingerprint": key})
