-- memctx 0014: a user's full-text matches through one index (issue 13).
--
-- Past the exact scan, the full-text list reads each query term's matches among the scope's
-- messages (`search_lexical_bounded` in memctx/sql/retrieve.sql). With a GIN index on tsv alone,
-- Postgres intersected the term's matches over the whole table with a bitmap of every message
-- of the user: 100,000 entries per term for a heavy user (~13 ms each on 1M messages, 2 cores).
-- A GIN index on (user_id, tsv) (btree_gin, a contrib module that Supabase offers) finds the
-- user's matches of a term directly. It replaces the index on tsv alone: every full-text query
-- of memctx is scoped to one user. The build takes ~20 s per million messages.

create extension if not exists btree_gin;

create index messages_user_tsv_idx on memctx.messages using gin (user_id, tsv);

drop index memctx.messages_tsv_idx;
