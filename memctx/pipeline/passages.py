"""Passages of long messages: cut, embedded and stored by the catch-up.

Owns: `cut_passages`, which finds a conversation's messages over `passage_min_tokens` without
passages, cuts each with `memctx.passages.split_passages`, embeds the passages and stores them
(working_memory_chunks, chunk_type 'passage'), round by round with no transaction open while the
model runs. Idempotent: a message with passages is done; one whose text changed meanwhile is
left for the next catch-up. It does not decide where passages end (memctx/passages.py does).
"""

from __future__ import annotations

import hashlib
from uuid import UUID

from memctx.app import App
from memctx.passages import split_passages
from memctx.pipeline.embedding import EMBED_ROUND
from memctx.sql import QUERIES

# Messages read per round (a reply of ~350 tokens gives ~3 passages: a round embeds ~100).
CUT_ROUND = 32


def cut_passages(app: App, user_id: UUID, conversation_id: UUID, *, batch: int | None = None) -> int:
    """Cut, embed and store the passages of the conversation's long messages that have none;
    returns how many passages were stored."""
    settings = app.settings
    batch = batch or CUT_ROUND
    stored = 0
    seen: set[UUID] = set()
    while True:
        with app.pool.connection() as conn:
            rows = conn.execute(QUERIES["uncut_messages"], {
                "user_id": user_id, "conversation_id": conversation_id, "min_tokens": settings.passage_min_tokens,
                "limit": batch}).fetchall()
        rows = [r for r in rows if r["id"] not in seen]  # changed while being cut: the next catch-up's
        if not rows:
            return stored
        seen.update(r["id"] for r in rows)
        cut = [(r, p) for r in rows
               for p in split_passages(r["text"], app.counter, settings.passage_tokens, settings.passage_overlap)]
        vectors = []
        for i in range(0, len(cut), EMBED_ROUND):
            vectors.extend(app.embedder.embed([p.text for _, p in cut[i:i + EMBED_ROUND]]))
        with app.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(QUERIES["insert_passage"], [
                {"message_id": r["id"], "user_id": user_id, "digest": hashlib.md5(r["text"].encode()).hexdigest(),
                 "part": p.part, "text": p.text, "token_count": p.token_count, "embedding": v}
                for (r, p), v in zip(cut, vectors)])
            stored += cur.rowcount if cur.rowcount > 0 else 0
