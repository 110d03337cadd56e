-- memctx 0028: the proxy's shadow run.
--
-- In shadow mode the proxy sends the client's own request to the upstream, byte for byte, and
-- still stores the turn and builds the context it would have sent; this records the two side by
-- side, so a team can compare them before it switches a conversation to live.
--
--  * conversations.proxy_mode: 'live' or 'shadow' for one conversation; null follows the server's
--    MEMCTX_PROXY_MODE. A request's X-Memctx-Mode header overrides both.
--  * context_requests: a shadow call logs a row of kind 'shadow' (tokens the context would have
--    used against the whole stored history, as for 'proxy').
--  * shadow_requests: beside that row, what the client sent against what memctx would have sent:
--    the client's tokens, the context's tokens, the context itself (the messages live mode sends,
--    so it holds message text, as messages do), and how many of the client's history messages
--    the context kept whole. Pruned with its log row (on delete cascade).
--  * shadow_comparison: the same per conversation and day, for dashboards (security_invoker).

alter table memctx.context_requests drop constraint context_requests_kind_check;
alter table memctx.context_requests
  add constraint context_requests_kind_check check (kind in ('context', 'proxy', 'shadow'));

alter table memctx.conversations add column proxy_mode text check (proxy_mode in ('live', 'shadow'));
grant update (proxy_mode) on memctx.conversations to authenticated;

create table memctx.shadow_requests (
  request_id bigint not null,
  user_id uuid not null,
  conversation_id uuid not null,
  created_at timestamptz not null default now(),
  -- the client's messages as it sent them, and the messages memctx would have sent in their place
  client_tokens integer not null check (client_tokens >= 0),
  context_tokens integer not null check (context_tokens >= 0),
  -- the client's messages before its last user message (the history it carries), with text
  history_messages integer not null check (history_messages >= 0),
  -- of those, the ones whose text the context holds whole
  history_kept integer not null check (history_kept between 0 and history_messages),
  -- the messages live mode would have sent, as a JSON array, and the SHA-256 of its JSON text
  context jsonb not null check (jsonb_typeof(context) = 'array'),
  context_sha256 text not null check (context_sha256 ~ '^[0-9a-f]{64}$'),
  primary key (request_id, user_id),
  constraint shadow_requests_request_fkey foreign key (request_id, user_id)
    references memctx.context_requests (id, user_id) on delete cascade,
  constraint shadow_requests_conversation_fkey foreign key (conversation_id, user_id)
    references memctx.conversations (id, user_id) on delete cascade on update cascade
);
create index shadow_requests_conversation_idx on memctx.shadow_requests (conversation_id, created_at);

alter table memctx.shadow_requests enable row level security;
create policy shadow_requests_owner on memctx.shadow_requests for all to authenticated
  using (user_id = (select auth.uid()))
  with check (user_id = (select auth.uid())
              and exists (select 1 from memctx.conversations c
                           where c.id = shadow_requests.conversation_id and c.user_id = (select auth.uid())));
grant select, insert, delete on memctx.shadow_requests to authenticated;
grant select, insert, update, delete on memctx.shadow_requests to service_role;

-- Per conversation and day: what the clients sent against what memctx would have sent.
create view memctx.shadow_comparison with (security_invoker = true) as
select s.user_id,
       s.conversation_id,
       date_trunc('day', s.created_at) as day,
       count(*) as requests,
       sum(s.client_tokens) as client_tokens,
       sum(s.context_tokens) as context_tokens,
       sum(s.client_tokens - s.context_tokens) as tokens_saved,
       round(sum(s.context_tokens)::numeric / nullif(sum(s.client_tokens), 0), 4) as context_share,
       sum(s.history_messages) as history_messages,
       sum(s.history_kept) as history_kept,
       round(sum(s.history_kept)::numeric / nullif(sum(s.history_messages), 0), 4) as history_kept_share
  from memctx.shadow_requests s
 group by s.user_id, s.conversation_id, date_trunc('day', s.created_at);

grant select on memctx.shadow_comparison to authenticated, service_role;
