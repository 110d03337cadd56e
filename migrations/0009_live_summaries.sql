-- memctx 0009: one definition of the live summaries.
-- A summary is live while it is in its conversation's chain: not superseded by a merge, a
-- regeneration or an edit's rebuild. The live chain, the working context and user-wide search
-- read this view; dashboards can too. `security_invoker`: RLS applies as the caller.
-- It leaves out `embedding`: `configure_embedding_space` sets that column's dimension, which a
-- view reading it would block. Search joins `memctx.summaries` by id for the vector.
create view memctx.live_summaries with (security_invoker = true) as
select s.id, s.conversation_id, s.user_id, s.level, s.is_master, s.content, s.source_kind, s.source_ids,
       s.first_seq, s.last_seq, s.token_count, s.tsv, s.summarizer, s.edited, s.created_at, s.updated_at
  from memctx.summaries s
 where s.superseded_at is null;

grant select on memctx.live_summaries to authenticated, service_role;
