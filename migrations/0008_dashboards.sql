-- memctx 0008: what the HTTP door records and what dashboards read.
--
--  * context_requests: one row per context call and per proxy call — tokens used against the
--    tokens of the whole conversation, latency per stage, sources by kind. It never holds message
--    text. Rows older than MEMCTX_REQUEST_LOG_RETENTION_DAYS are pruned by the log insert itself
--    (the caller's own old rows, through an index: usually none).
--  * idempotency_keys: a proxy request retried with the same Idempotency-Key stores nothing twice
--    and gets the stored reply once there is one.
--  * views for dashboards, all `security_invoker`: run as `authenticated`, RLS shows a user only
--    their own rows; run as service_role (or a superuser), everyone's.
--
-- Both tables hang off their conversation like every other table (0005): a composite foreign key
-- (conversation_id, user_id) with on delete cascade, and RLS that requires the conversation to be
-- the caller's own.

create table memctx.context_requests (
  id bigint generated always as identity primary key,
  user_id uuid not null,
  conversation_id uuid not null,
  kind text not null check (kind in ('context', 'proxy')),
  created_at timestamptz not null default now(),
  model text,
  token_budget integer not null check (token_budget >= 0),
  tokens_used integer not null check (tokens_used >= 0),
  -- what sending the whole stored conversation (and the same system prompt and query) would cost
  full_history_tokens bigint not null check (full_history_tokens >= 0),
  -- stage -> milliseconds: the WorkingContext's timings, and the proxy's upstream call
  timings_ms jsonb not null default '{}'::jsonb check (jsonb_typeof(timings_ms) = 'object'),
  -- source kind -> items included (message, summary, board, external)
  sources jsonb not null default '{}'::jsonb check (jsonb_typeof(sources) = 'object'),
  -- the proxy's upstream HTTP status (null for context calls)
  upstream_status smallint,
  constraint context_requests_conversation_fkey foreign key (conversation_id, user_id)
    references memctx.conversations (id, user_id) on delete cascade on update cascade
);
create index context_requests_user_idx on memctx.context_requests (user_id, created_at);
create index context_requests_conversation_idx on memctx.context_requests (conversation_id, created_at);

create table memctx.idempotency_keys (
  user_id uuid not null,
  key text not null check (length(key) between 1 and 255),
  conversation_id uuid not null,
  -- a digest of the request: the same key with another request is refused
  request_hash text not null,
  created_at timestamptz not null default now(),
  -- set once the reply is stored, in the same transaction
  completed_at timestamptz,
  response jsonb,
  primary key (user_id, key),
  constraint idempotency_keys_conversation_fkey foreign key (conversation_id, user_id)
    references memctx.conversations (id, user_id) on delete cascade on update cascade
);
create index idempotency_keys_created_idx on memctx.idempotency_keys (user_id, created_at);

do $$
declare
  tbl text;
begin
  foreach tbl in array array['context_requests', 'idempotency_keys'] loop
    execute format('alter table memctx.%I enable row level security', tbl);
    execute format($p$
      create policy %1$I on memctx.%2$I for all to authenticated
        using (user_id = (select auth.uid()))
        with check (user_id = (select auth.uid())
                    and exists (select 1 from memctx.conversations c
                                 where c.id = %2$I.conversation_id and c.user_id = (select auth.uid())))
    $p$, tbl || '_owner', tbl);
    execute format('grant select, delete on memctx.%I to authenticated', tbl);
    execute format('grant select, insert, update, delete on memctx.%I to service_role', tbl);
  end loop;
end
$$;

-- Ids come from the database (0005): authenticated writes every column but the id.
grant insert (user_id, conversation_id, kind, created_at, model, token_budget, tokens_used, full_history_tokens,
              timings_ms, sources, upstream_status)
  on memctx.context_requests to authenticated;
grant insert, update on memctx.idempotency_keys to authenticated;

-- Views for dashboards -------------------------------------------------------------------------

-- One row per conversation: messages and their tokens, live summaries by level, the board's age.
-- (No view reads an embedding column: configure_embedding_space alters its type.)
create view memctx.conversation_overview with (security_invoker = true) as
select c.id as conversation_id,
       c.user_id,
       c.external_id,
       c.title,
       c.created_at,
       c.last_message_at,
       c.closed_at,
       c.message_count,
       coalesce(m.tokens, 0) as message_tokens,
       coalesce(s.live, 0) as live_summaries,
       coalesce(s.by_level, '{}'::jsonb) as summaries_by_level,
       b.updated_at as board_updated_at,
       now() - b.updated_at as board_age,
       c.last_seq - coalesce(b.last_seq, 0) as messages_since_board
  from memctx.conversations c
  left join lateral (
    select sum(x.token_count) as tokens
      from memctx.messages x where x.conversation_id = c.id
  ) m on true
  left join lateral (
    select sum(l.n) as live, jsonb_object_agg(l.level, l.n) as by_level
      from (select case when y.is_master then 'master' else y.level::text end as level, count(*) as n
              from memctx.summaries y
             where y.conversation_id = c.id and y.superseded_at is null
             group by 1) l
  ) s on true
  left join memctx.summary_boards b on b.conversation_id = c.id;

-- One row per conversation with work waiting for the worker: how much, and how late.
create view memctx.worker_backlog with (security_invoker = true) as
select o.user_id,
       o.conversation_id,
       count(*) filter (where o.processed_at is null) as pending,
       count(*) filter (where o.processed_at is null and o.claimed_at is not null) as claimed,
       count(*) filter (where o.processed_at is null and o.last_error is not null) as failing,
       max(o.attempts) filter (where o.processed_at is null) as max_attempts,
       min(o.created_at) filter (where o.processed_at is null) as oldest_pending_at,
       now() - min(o.created_at) filter (where o.processed_at is null) as lag,
       max(o.processed_at) as last_processed_at,
       -- seconds from insert to processed, over the rows processed in the last hour
       percentile_cont(0.5) within group (order by extract(epoch from o.processed_at - o.created_at))
         filter (where o.processed_at > now() - interval '1 hour') as recent_lag_p50_s,
       percentile_cont(0.95) within group (order by extract(epoch from o.processed_at - o.created_at))
         filter (where o.processed_at > now() - interval '1 hour') as recent_lag_p95_s
  from memctx.outbox o
 group by o.user_id, o.conversation_id
having count(*) filter (where o.processed_at is null) > 0;

-- Per conversation, day and kind (context, proxy): tokens sent against the whole history.
create view memctx.token_savings with (security_invoker = true) as
select r.user_id,
       r.conversation_id,
       r.kind,
       date_trunc('day', r.created_at) as day,
       count(*) as requests,
       sum(r.tokens_used) as tokens_used,
       sum(r.full_history_tokens) as full_history_tokens,
       sum(greatest(r.full_history_tokens - r.tokens_used, 0)) as tokens_saved,
       round(1 - sum(r.tokens_used)::numeric / nullif(sum(r.full_history_tokens), 0), 4) as saved_share,
       percentile_cont(0.5) within group (order by (r.timings_ms ->> 'total')::float8) as context_ms_p50,
       percentile_cont(0.95) within group (order by (r.timings_ms ->> 'total')::float8) as context_ms_p95
  from memctx.context_requests r
 group by r.user_id, r.conversation_id, r.kind, date_trunc('day', r.created_at);

grant select on memctx.conversation_overview, memctx.worker_backlog, memctx.token_savings
  to authenticated, service_role;
