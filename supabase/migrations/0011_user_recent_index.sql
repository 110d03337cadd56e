-- memctx 0011: the latest messages of a user, through an index.
--
-- A user-wide search ranks the user's most recent turns (the recency list of `search_user`) and
-- may limit itself to a time range. With only (user_id, conversation_id, seq) to read them by,
-- both sorted every message of the user per query: 100,000 rows for a heavy user. This index
-- serves `order by created_at desc, seq desc limit k` and the range on created_at directly.
create index messages_user_recent_idx on memctx.messages (user_id, created_at desc, seq desc);
