-- The HTTP door's records: the context request log and the proxy's idempotency keys (0008).
-- Run as the caller (role authenticated): RLS scopes every statement to the caller's rows.

-- name: log_context_request
-- One row per context or proxy call, and the caller's rows past retention pruned (an index range
-- on (user_id, created_at): usually empty). full_history_tokens is what the whole stored
-- conversation up to `through_seq` (null: all of it) costs as chat messages, plus `fixed_tokens`
-- (the system prompt, the reply priming and, when not stored yet, the query).
with pruned as (
  delete from memctx.context_requests
   where user_id = %(user_id)s and created_at < now() - make_interval(secs => %(retention_s)s)
), history as (
  select coalesce(sum(coalesce(m.token_count, 0) + %(per_message)s), 0) as tokens
    from memctx.messages m
   where m.user_id = %(user_id)s and m.conversation_id = %(conversation_id)s
     and m.seq <= coalesce(%(through_seq)s::bigint, m.seq)
)
insert into memctx.context_requests (user_id, conversation_id, kind, model, token_budget, tokens_used,
                                     full_history_tokens, timings_ms, sources, upstream_status)
select %(user_id)s, %(conversation_id)s, %(kind)s, %(model)s, %(token_budget)s, %(tokens_used)s,
       %(fixed_tokens)s + h.tokens, %(timings_ms)s, %(sources)s, %(upstream_status)s
  from history h
returning id, tokens_used, full_history_tokens

-- name: commit_without_flush_wait
-- A transaction that only writes the log need not wait for its WAL flush: a crash may lose the
-- last few log rows (never user data), and the request does not wait on the disk.
set local synchronous_commit = off

-- name: claim_idempotency_key
-- The key's row, created now (created = true) or as an earlier request left it; the caller's keys
-- past their keep time are pruned first. A concurrent first claim of the same key returns no row
-- (its insert was not visible to this statement's snapshot): ask again.
with pruned as (
  delete from memctx.idempotency_keys
   where user_id = %(user_id)s and key <> %(key)s and created_at < now() - make_interval(secs => %(keep_s)s)
), claimed as (
  insert into memctx.idempotency_keys (user_id, key, conversation_id, request_hash)
  values (%(user_id)s, %(key)s, %(conversation_id)s, %(request_hash)s)
  on conflict (user_id, key) do nothing
  returning conversation_id, request_hash, completed_at, response, true as created
)
select * from claimed
union all
select conversation_id, request_hash, completed_at, response, false as created
  from memctx.idempotency_keys
 where user_id = %(user_id)s and key = %(key)s and not exists (select 1 from claimed)

-- name: complete_idempotency_key
-- Record the reply once: the row lock serializes two retries finishing together, and only the
-- first gets a row back (and stores the reply).
update memctx.idempotency_keys set completed_at = now(), response = %(response)s
 where user_id = %(user_id)s and key = %(key)s and completed_at is null
returning key
