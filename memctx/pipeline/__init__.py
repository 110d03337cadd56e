"""The write path after a message is stored, one module a stage.

    message row ─ trigger ─▶ outbox + NOTIFY ─▶ dispatch ─▶ (worker) ─▶ catchup
        catchup: embedding (messages) → chain steps (summaries) → board → embedding (live summaries)
        dispatch sweeps: backfill (superseded summaries' embeddings), idle closes → longterm
        user_index: a heavy user's own HNSW index, built and dropped in the background

`catchup` applies the pure rules of `memctx.summarize` to the database; `dispatch` turns outbox
rows into jobs and knows nothing of Dramatiq (worker/ does).
"""
