-- What a person's dashboard reads (the summary-board page): conversations with their savings, one
-- conversation's summary tree, the messages items came from, the last working contexts, and a
-- cheap version that changes whenever the worker writes. Run as the caller: RLS scopes every row.

-- name: dashboard_conversations
-- The caller's conversations, most recently active first (or the one named), with messages,
-- live summaries, the context log's token savings and the work still pending: outbox rows not
-- processed yet for messages the board does not cover (a summarize-now leaves none).
select o.conversation_id as id, o.external_id, o.title, o.created_at, o.last_message_at, o.closed_at,
       o.message_count, o.message_tokens, o.live_summaries, o.summaries_by_level, o.board_updated_at,
       o.messages_since_board,
       coalesce(t.requests, 0) as requests, coalesce(t.tokens_used, 0) as tokens_used,
       coalesce(t.full_history_tokens, 0) as full_history_tokens, coalesce(t.tokens_saved, 0) as tokens_saved,
       (select count(*) from memctx.outbox x
         where x.conversation_id = o.conversation_id and x.user_id = o.user_id and x.processed_at is null
           and (x.seq is null or x.seq > coalesce(b.last_seq, 0))) as pending
  from memctx.conversation_overview o
  left join lateral (
    select sum(s.requests) as requests, sum(s.tokens_used) as tokens_used,
           sum(s.full_history_tokens) as full_history_tokens, sum(s.tokens_saved) as tokens_saved
      from memctx.token_savings s where s.conversation_id = o.conversation_id and s.user_id = o.user_id
  ) t on true
  left join memctx.summary_boards b on b.conversation_id = o.conversation_id and b.user_id = o.user_id
 where o.user_id = %(user_id)s
   and (%(conversation_id)s::uuid is null or o.conversation_id = %(conversation_id)s::uuid)
 order by coalesce(o.last_message_at, o.created_at) desc, o.conversation_id
 limit %(limit)s

-- name: summary_tree
-- The live summaries and, through source_ids, every summary folded into them (superseded ones
-- too: a master keeps the summaries it merged), in one walk. `parent_id` is null for a live one.
with recursive tree as (
  select s.id, null::uuid as parent_id, 0 as depth
    from memctx.live_summaries s
   where s.conversation_id = %(conversation_id)s and s.user_id = %(user_id)s
  union all
  select c.id, t.id, t.depth + 1
    from tree t
    join memctx.summaries p on p.id = t.id and p.user_id = %(user_id)s and p.source_kind = 'summary'
    join memctx.summaries c on c.id = any(p.source_ids) and c.conversation_id = p.conversation_id
                           and c.user_id = %(user_id)s
   where t.depth < 32
)
select t.id, t.parent_id, s.level, s.is_master, s.content, s.source_kind, s.first_seq, s.last_seq,
       s.token_count, s.edited, s.superseded_at is null as live
  from tree t join memctx.summaries s on s.id = t.id and s.user_id = %(user_id)s
 order by t.parent_id nulls first, s.is_master desc, s.level desc, s.first_seq

-- name: messages_in_range
-- A conversation's messages between two seqs (the messages a summary covers), at most `limit`.
select id, conversation_id, user_id, seq, role, content, text, external_id, token_count, created_at, metadata
  from memctx.messages
 where conversation_id = %(conversation_id)s and user_id = %(user_id)s
   and seq between %(first_seq)s and %(last_seq)s
 order by seq
 limit %(limit)s

-- name: messages_by_ids
-- The messages a board's items came from.
select id, conversation_id, user_id, seq, role, content, text, external_id, token_count, created_at, metadata
  from memctx.messages
 where conversation_id = %(conversation_id)s and user_id = %(user_id)s and id = any(%(ids)s::uuid[])
 order by seq

-- name: recent_context_requests
-- The last working contexts built for a conversation: tokens, budget, sources by kind, latency.
select created_at, kind, model, token_budget, tokens_used, full_history_tokens, sources,
       (timings_ms ->> 'total')::float8 as total_ms, upstream_status
  from memctx.context_requests
 where conversation_id = %(conversation_id)s and user_id = %(user_id)s
 order by created_at desc, id desc
 limit %(limit)s

-- name: conversation_version
-- What changes whenever messages, summaries or the board do, and the pending work (as above): a
-- page polls this and redraws only when it moves. Indexed lookups only.
select c.last_seq, c.closed_at, b.updated_at as board_at,
       (select max(s.updated_at) from memctx.summaries s
         where s.conversation_id = c.id and s.user_id = c.user_id) as summaries_at,
       (select count(*) from memctx.outbox o
         where o.conversation_id = c.id and o.user_id = c.user_id and o.processed_at is null
           and (o.seq is null or o.seq > coalesce(b.last_seq, 0))) as pending
  from memctx.conversations c
  left join memctx.summary_boards b on b.conversation_id = c.id and b.user_id = c.user_id
 where c.id = %(conversation_id)s and c.user_id = %(user_id)s
