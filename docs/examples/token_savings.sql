-- Tokens saved over the last 7 days, per conversation and kind (context calls, proxy calls).
select conversation_id, kind, sum(requests) as requests, sum(tokens_used) as tokens_used,
       sum(tokens_saved) as tokens_saved,
       round(1 - sum(tokens_used)::numeric / nullif(sum(full_history_tokens), 0), 3) as saved_share
  from memctx.token_savings
 where day >= date_trunc('day', now()) - interval '6 days'
 group by conversation_id, kind
 order by tokens_saved desc
