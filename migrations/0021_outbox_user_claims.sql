-- memctx 0021: the dispatcher claims outbox rows one user at a time.
--
-- claim_outbox took the oldest claimable rows of every user in one `FOR UPDATE SKIP LOCKED`.
-- Citus runs FOR UPDATE on a single shard only, so on a cluster distributed by user_id that claim
-- would be refused. The dispatcher now lists the users with claimable rows (a plain read, which
-- may span shards) and claims each user's rows with `user_id = …` (memctx/sql/outbox.sql). This
-- index serves that per-user claim: the pending rows of one user in id order, without reading
-- the processed rows kept for MEMCTX_OUTBOX_KEEP_HOURS that outbox_user_idx (user_id) holds.
-- Small: only pending rows, which the worker keeps few.

create index outbox_user_pending_idx on memctx.outbox (user_id, id) where processed_at is null;
