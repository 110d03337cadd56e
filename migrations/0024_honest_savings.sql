-- Tokens saved are the whole history's tokens less those sent, summed as they are: a context that
-- cost more than the history (memories of other conversations, web results) counts against the
-- savings instead of as zero, so the view shows what memctx really saved.
create or replace view memctx.token_savings with (security_invoker = true) as
select r.user_id,
       r.conversation_id,
       r.kind,
       date_trunc('day', r.created_at) as day,
       count(*) as requests,
       sum(r.tokens_used) as tokens_used,
       sum(r.full_history_tokens) as full_history_tokens,
       sum(r.full_history_tokens - r.tokens_used) as tokens_saved,
       round(1 - sum(r.tokens_used)::numeric / nullif(sum(r.full_history_tokens), 0), 4) as saved_share,
       percentile_cont(0.5) within group (order by (r.timings_ms ->> 'total')::float8) as context_ms_p50,
       percentile_cont(0.95) within group (order by (r.timings_ms ->> 'total')::float8) as context_ms_p95
  from memctx.context_requests r
 group by r.user_id, r.conversation_id, r.kind, date_trunc('day', r.created_at);
