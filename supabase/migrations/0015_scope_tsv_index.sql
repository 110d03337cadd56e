-- memctx 0015: the full-text matches of one conversation through the same index as a user's.
--
-- 0014's GIN on (user_id, tsv) gives a term's matches among all of the user's messages; a search
-- in one conversation then read every one of them from the heap to keep its own (1,566 rows
-- per term read for 75 kept, in a heavy user's 5,000-turn conversation). A GIN index answers a
-- condition on any subset of its columns, so one on (user_id, conversation_id, tsv) serves both
-- scopes: a user's matches, or one conversation's, intersected inside the index. On the 1M
-- realistic database the heavy user's conversation search went from 87 to 40 ms p50, its
-- user-wide search did not move (docs/BENCHMARKS.md, "Scale cuts").

create index messages_scope_tsv_idx on memctx.messages using gin (user_id, conversation_id, tsv);

drop index memctx.messages_user_tsv_idx;
