-- The proxy's shadow run (0028): a conversation's proxy mode, and one record per shadow call beside
-- its request-log row. Run as the caller (role authenticated): RLS scopes every statement.

-- name: conversation_proxy_mode
select proxy_mode from memctx.conversations where user_id = %(user_id)s and id = %(conversation_id)s

-- name: set_proxy_mode
update memctx.conversations set proxy_mode = %(mode)s
 where user_id = %(user_id)s and id = %(conversation_id)s
returning proxy_mode

-- name: record_shadow_request
insert into memctx.shadow_requests (request_id, user_id, conversation_id, client_tokens, context_tokens,
                                    history_messages, history_kept, context, context_sha256)
values (%(request_id)s, %(user_id)s, %(conversation_id)s, %(client_tokens)s, %(context_tokens)s,
        %(history_messages)s, %(history_kept)s, %(context)s, %(context_sha256)s)

-- name: shadow_series
-- A conversation's last shadow calls, oldest first: what the page plots.
select created_at, client_tokens, context_tokens, history_messages, history_kept
  from (select s.created_at, s.request_id, s.client_tokens, s.context_tokens, s.history_messages, s.history_kept
          from memctx.shadow_requests s
         where s.user_id = %(user_id)s and s.conversation_id = %(conversation_id)s
         order by s.created_at desc, s.request_id desc
         limit %(limit)s) last
 order by created_at, request_id

-- name: shadow_totals
-- A conversation's shadow calls, all of them, summed from the dashboard view.
select coalesce(sum(requests), 0)::bigint as requests, coalesce(sum(client_tokens), 0)::bigint as client_tokens,
       coalesce(sum(context_tokens), 0)::bigint as context_tokens,
       coalesce(sum(history_messages), 0)::bigint as history_messages,
       coalesce(sum(history_kept), 0)::bigint as history_kept
  from memctx.shadow_comparison
 where user_id = %(user_id)s and conversation_id = %(conversation_id)s
