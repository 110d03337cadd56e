-- Fix the embedding space for memctx's default embedder (int8 all-MiniLM-L6-v2, 384 dims).
-- `memctx migrate` does the same for whatever embedder is configured; a mismatch is an error.
select memctx.configure_embedding_space('all-MiniLM-L6-v2-int8', 384);
