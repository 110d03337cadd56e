"""Embedding what arrived without one: messages written by plain SQL, the summaries a catch-up
wrote, and (off the catch-up's path) the superseded summaries, claimed row by row so that
concurrent backfills never embed one twice. No transaction stays open while the model runs.
"""

from __future__ import annotations

import time
from uuid import UUID

from memctx import metrics
from memctx.app import App
from memctx.sql import QUERIES


# Rows read per embedding round: large enough that the embedder sorts and batches well (its own
# batch size is `embed_batch_size`), small enough that a round stays a few seconds.
EMBED_ROUND = 256

def embed_messages(app: App, user_id: UUID, conversation_id: UUID, *, batch: int | None = None) -> int:
    """Embed (and token-count) the conversation's messages stored without; returns how many.

    A message without searchable text is neither embedded nor returned here (the database gives
    it 0 tokens and no embedding, so it is never a dense search hit).
    """
    batch = batch or EMBED_ROUND
    done = 0
    while True:
        with app.pool.connection() as conn:  # no transaction stays open while the model runs
            rows = conn.execute(QUERIES["unembedded_messages"],
                                {"conversation_id": conversation_id, "user_id": user_id, "limit": batch}).fetchall()
        if not rows:
            return done
        counts = app.counter.count_many([r["text"] for r in rows])
        # Rows inserted by plain SQL were not token-counted at insert: one over the limit (which
        # ingest refuses) is kept with its true count and embedded by its first `limit` tokens.
        limit = app.settings.max_message_tokens
        vectors = app.embedder.embed([app.counter.truncate(r["text"], limit) if c > limit else r["text"]
                                      for r, c in zip(rows, counts)])
        with app.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(QUERIES["set_message_embedding"], [
                {"id": r["id"], "user_id": user_id, "embedding": v, "token_count": c}
                for r, v, c in zip(rows, vectors, counts)])
        done += len(rows)
        metrics.MESSAGES_EMBEDDED.inc(len(rows))


def embed_summaries(app: App, user_id: UUID, conversation_id: UUID, *, batch: int | None = None, live_only: bool | None = None) -> int:
    """Embed the conversation's summaries written without an embedding, in batches.

    With `live_only` (default unless `summary_embeddings == "all"`), only the live ones: those
    superseded before they were embedded are left to `backfill_summary_embeddings`, off the
    catch-up's path (memory search reads live summaries only).
    """
    batch = batch or EMBED_ROUND
    live_only = app.settings.summary_embeddings != "all" if live_only is None else live_only
    done = 0
    while True:
        with app.pool.connection() as conn:
            rows = conn.execute(QUERIES["unembedded_summaries"],
                                {"conversation_id": conversation_id, "user_id": user_id, "limit": batch,
                                 "live_only": live_only}).fetchall()
        if not rows:
            return done
        vectors = app.embedder.embed([r["content"] for r in rows])
        with app.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(QUERIES["set_summary_embedding"],
                            [{"id": r["id"], "user_id": user_id, "embedding": v} for r, v in zip(rows, vectors)])
        done += len(rows)


def backfill_summary_embeddings(app: App, *, limit: int | None = None, conversation_id: UUID | None = None) -> int:
    """Embed one batch of the oldest superseded summaries stored without an embedding.

    Low-priority work for the worker's sweep and idle time (all conversations) and for
    `memctx summarize` (one conversation). Each row is claimed with a session advisory try-lock
    on an autocommit connection, so concurrent backfills never embed the same row and no
    transaction is open while the embedder runs. Returns how many were embedded (0 when nothing
    is left, or every candidate is being embedded by another backfill right now).
    """
    key = {"conversation_id": conversation_id, "limit": limit or app.settings.backfill_batch_size}
    with app.pool.connection() as claim:
        claim.autocommit = True
        ids = [r["id"] for r in claim.execute(QUERIES["lock_unembedded_summaries"], key).fetchall()]
        if not ids:
            claim.autocommit = False
            return 0
        try:
            rows = claim.execute(QUERIES["locked_unembedded_summaries"], {"ids": ids}).fetchall()
            texts = [r["content"] for r in rows]
            vectors = app.embedder.embed(texts) if rows else []
            counts = app.counter.count_many(texts) if rows else []
            if rows:
                with claim.transaction(), claim.cursor() as cur:
                    cur.executemany(QUERIES["set_backfilled_summary_embedding"], [
                        {"id": r["id"], "user_id": r["user_id"], "embedding": v, "token_count": c}
                        for r, v, c in zip(rows, vectors, counts)])
            claim.execute(QUERIES["unlock_summaries"], {"ids": ids})
            claim.autocommit = False
        except BaseException:
            claim.close()  # a connection that may still hold row locks never goes back to the pool
            raise
    metrics.SUMMARIES_BACKFILLED.inc(len(rows))
    return len(rows)


def backfill_conversation(app: App, user_id: UUID, conversation_id: UUID, *, poll_s: float = 0.05) -> int:
    """Backfill until every summary of the conversation has an embedding; returns how many it did.

    Rows another backfill holds are waited for, so the conversation is fully embedded on return.
    """
    done = 0
    while True:
        n = backfill_summary_embeddings(app, conversation_id=conversation_id)
        done += n
        if n == 0:
            with app.pool.connection() as conn:
                left = conn.execute(QUERIES["unembedded_summary_count"],
                                    {"conversation_id": conversation_id}).fetchone()["n"]
            if left == 0:
                return done
            embed_summaries(app, user_id, conversation_id, live_only=True)  # live rows left by a failed catch-up
            time.sleep(poll_s)
