-- The outbox: pending background work, one row per inserted message (written by the messages
-- trigger) or per explicit request ('summarize', 'close').

-- name: claimable_outbox_users
-- Across users: the users with claimable rows (unclaimed, or claimed under a lease that expired:
-- the worker that claimed them died or its job was lost), oldest pending row first. A plain read,
-- no lock: the claims below go user by user, so that each is a single-user statement (Citus runs
-- FOR UPDATE on one shard only, and a user's rows are on one shard).
select user_id
  from memctx.outbox
 where processed_at is null
   and (claimed_at is null or claimed_at < now() - make_interval(secs => %(lease_s)s))
   and attempts < %(max_attempts)s
 group by user_id
 order by min(id)
 limit %(limit)s

-- name: claim_outbox
-- Claim one user's claimable rows oldest first, skipping rows another dispatcher is claiming
-- right now, and return them grouped per conversation: one job per conversation, however many
-- rows.
with claimable as (
  select id from memctx.outbox
   where user_id = %(user_id)s::uuid
     and processed_at is null
     and (claimed_at is null or claimed_at < now() - make_interval(secs => %(lease_s)s))
     and attempts < %(max_attempts)s
   order by id
   limit %(limit)s
   for update skip locked
), claimed as (
  update memctx.outbox o
     set claimed_at = now(), claimed_by = %(claimed_by)s, attempts = o.attempts + 1
    from claimable c
   where o.id = c.id and o.user_id = %(user_id)s::uuid
  returning o.id, o.user_id, o.conversation_id, o.kind
)
select user_id, conversation_id, count(*) as rows, bool_or(kind = 'close') as close,
       bool_or(kind = 'summarize') as summarize
  from claimed
 group by user_id, conversation_id
 order by min(id)

-- name: mark_outbox_processed
-- Done: the messages up to the seq the job read first, and the explicit requests claimed before
-- the job started. Message seqs are assigned under the conversation row lock, so every message
-- with seq <= upto_seq was committed when the job read upto_seq.
update memctx.outbox
   set processed_at = now(), last_error = null
 where conversation_id = %(conversation_id)s and user_id = %(user_id)s and processed_at is null
   and ((kind = 'message' and seq <= %(upto_seq)s)
        or (kind <> 'message' and claimed_at is not null and claimed_at <= %(started_at)s))

-- name: record_outbox_error
update memctx.outbox set last_error = %(error)s
 where conversation_id = %(conversation_id)s and user_id = %(user_id)s and processed_at is null

-- name: enqueue_request
-- An explicit request ('summarize' or 'close') for the worker; the caller wakes it with
-- notify_outbox in the same transaction.
insert into memctx.outbox (user_id, conversation_id, kind)
select c.user_id, c.id, %(kind)s from memctx.conversations c
 where c.id = %(conversation_id)s and c.user_id = %(user_id)s
returning id, conversation_id

-- name: notify_outbox
-- Wake the dispatchers for these conversations at commit (one notification per conversation and
-- transaction: Postgres folds repeats, so the messages trigger's own NOTIFY adds none). A
-- statement of its own that reads no table, so on Citus it runs on the coordinator, where the
-- dispatchers LISTEN; the trigger's NOTIFY runs wherever the shard is.
select pg_notify('memctx_outbox', c::text) from unnest(%(conversation_ids)s::uuid[]) as c

-- name: enqueue_idle_closes
-- Across users: conversations idle for idle_s seconds (by when their newest message was
-- inserted, not the time it claims to have been said) with messages not yet in their long-term
-- summary, and no close already pending: queue a 'close' request. Every join matches user_id
-- too, so that on Citus each join stays on one shard.
insert into memctx.outbox (user_id, conversation_id, kind)
select c.user_id, c.id, 'close'
  from memctx.conversations c
  join memctx.messages m on m.conversation_id = c.id and m.seq = c.last_seq and m.user_id = c.user_id
  left join memctx.conversation_summaries s on s.conversation_id = c.id and s.user_id = c.user_id
 where c.last_seq > coalesce(s.last_seq, 0)
   and m.inserted_at < now() - make_interval(secs => %(idle_s)s)
   and not exists (select 1 from memctx.outbox o
                    where o.conversation_id = c.id and o.user_id = c.user_id and o.kind = 'close'
                      and o.processed_at is null)
 limit %(limit)s
returning conversation_id

-- name: outbox_backlog
-- Across users: the metrics' gauge.
select count(*) as pending,
       coalesce(extract(epoch from now() - min(created_at)), 0)::float8 as oldest_s,
       count(*) filter (where attempts >= %(max_attempts)s) as dead
  from memctx.outbox where processed_at is null

-- name: purge_processed_outbox
-- Across users. Old processed rows, found by primary-key range below the oldest pending row (no full scan).
delete from memctx.outbox
 where id < coalesce((select min(id) from memctx.outbox where processed_at is null),
                     (select max(id) + 1 from memctx.outbox))
   and processed_at < now() - make_interval(secs => %(keep_s)s)
