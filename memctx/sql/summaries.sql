-- Summary hierarchy and board: read the live chain, write summaries and boards. Always scoped by
-- conversation (and user where a caller names one).

-- name: lock_conversation_summaries
-- One summarization at a time per conversation, held until the step's transaction ends. An
-- advisory lock rather than the conversation row, so chat inserts (which update that row) never
-- wait for a summarizer.
select pg_advisory_xact_lock(hashtextextended('memctx.summarize:' || %(conversation_id)s::text, 0))

-- name: try_lock_catch_up
-- One catch-up at a time per conversation (a session lock, distinct from the step lock above): a
-- duplicate job waits for the running one instead of embedding the same rows twice.
select pg_try_advisory_lock(hashtextextended('memctx.catch_up:' || %(conversation_id)s::text, 0)) as locked

-- name: unlock_catch_up
select pg_advisory_unlock(hashtextextended('memctx.catch_up:' || %(conversation_id)s::text, 0)) as unlocked

-- name: conversation_owner
select id, user_id, last_seq, message_count, closed_at from memctx.conversations
 where id = %(conversation_id)s and user_id = %(user_id)s

-- name: covered_tokens
-- The tokens of the messages seq first_seq..last_seq of a conversation: what a summary of them
-- covers, whatever its sources (messages or summaries of them).
select coalesce(sum(m.token_count), 0)::int as tokens
  from memctx.messages m
 where m.user_id = %(user_id)s and m.conversation_id = %(conversation_id)s
   and m.seq between %(first_seq)s and %(last_seq)s

-- name: live_chain
-- The live chain in chain order: master, summaries from the highest level down (oldest first),
-- then the raw messages after the covered prefix (at most raw_limit of them; null = all).
with live as (
  select s.id, 'summary'::text as kind, s.level, s.is_master, s.first_seq, s.last_seq, s.content as text,
         s.token_count, s.edited, null::text as role, null::text as speaker, null::timestamptz as created_at,
         s.source_ids
    from memctx.live_summaries s
   where s.conversation_id = %(conversation_id)s and s.user_id = %(user_id)s
), covered as (
  select coalesce(max(last_seq), 0) as upto from live
), raw as (
  select m.id, 'message'::text as kind, 0::smallint as level, false as is_master, m.seq as first_seq,
         m.seq as last_seq, m.text, m.token_count, false as edited, m.role, m.metadata ->> 'speaker' as speaker,
         m.created_at, null::uuid[] as source_ids
    from memctx.messages m, covered
   where m.conversation_id = %(conversation_id)s and m.user_id = %(user_id)s and m.seq > covered.upto
   order by m.seq
   limit %(raw_limit)s
)
select * from (select * from live union all select * from raw) chain
 order by is_master desc, level desc, first_seq

-- name: insert_summary
insert into memctx.summaries
  (conversation_id, user_id, level, is_master, content, source_kind, source_ids, first_seq, last_seq,
   token_count, summarizer)
values
  (%(conversation_id)s, %(user_id)s, %(level)s, %(is_master)s, %(content)s, %(source_kind)s, %(source_ids)s,
   %(first_seq)s, %(last_seq)s, %(token_count)s, %(summarizer)s)
returning id

-- name: supersede_summaries
update memctx.summaries
   set superseded_by = %(superseded_by)s, superseded_at = now(), updated_at = now()
 where id = any(%(ids)s::uuid[]) and conversation_id = %(conversation_id)s and user_id = %(user_id)s
   and superseded_at is null
returning id

-- name: merge_into_master
-- The master is updated in place: it gains the merged summary as a source and its range grows.
update memctx.summaries
   set content = %(content)s, source_ids = source_ids || %(added)s::uuid[], last_seq = %(last_seq)s,
       token_count = %(token_count)s, summarizer = %(summarizer)s, embedding = null, edited = false,
       updated_at = now()
 where id = %(id)s and conversation_id = %(conversation_id)s and user_id = %(user_id)s and is_master
   and superseded_at is null
returning id

-- name: unembedded_summaries
select id, content from memctx.summaries
 where conversation_id = %(conversation_id)s and user_id = %(user_id)s and embedding is null
   and (not %(live_only)s or superseded_at is null)
 order by first_seq, level
 limit %(limit)s

-- name: set_summary_embedding
update memctx.summaries set embedding = %(embedding)s where id = %(id)s and user_id = %(user_id)s

-- name: lock_unembedded_summaries
-- Across users (or within one conversation). The backfill's claim: the oldest superseded summaries without an embedding (live ones are the
-- catch-up's), each under a session advisory lock taken with a try-lock, so concurrent backfills
-- skip each other's rows and no transaction stays open while the embedder runs. The candidates
-- are materialized and the outer query has no LIMIT, so every lock taken is a row returned.
with candidates as materialized (
  select id from memctx.summaries
   where embedding is null and superseded_at is not null
     and (%(conversation_id)s::uuid is null or conversation_id = %(conversation_id)s::uuid)
   order by created_at, id
   limit %(limit)s
)
select id from candidates
 where pg_try_advisory_lock(hashtextextended('memctx.embed_summary:' || id::text, 0))

-- name: locked_unembedded_summaries
-- Across users: the claimed ids may be any users'. Re-read after locking (a new snapshot): a row another backfill embedded and unlocked between
-- our candidate scan and our lock is dropped here, so no row is embedded twice.
select id, user_id, content, token_count from memctx.summaries where id = any(%(ids)s::uuid[]) and embedding is null

-- name: set_backfilled_summary_embedding
update memctx.summaries
   set embedding = %(embedding)s, token_count = coalesce(token_count, %(token_count)s)
 where id = %(id)s and user_id = %(user_id)s and embedding is null

-- name: unlock_summaries
select count(*) filter (where pg_advisory_unlock(hashtextextended('memctx.embed_summary:' || id::text, 0)))
       as unlocked
  from unnest(%(ids)s::uuid[]) as id

-- name: unembedded_summary_count
-- Across users (or within one conversation): the backfill's backlog.
select count(*) as n from memctx.summaries
 where embedding is null and (%(conversation_id)s::uuid is null or conversation_id = %(conversation_id)s::uuid)

-- name: unembedded_messages
-- A message without text is left without an embedding (the messages trigger of 0005 gives it 0
-- tokens): an embedded empty string would match any query at ~0.17 cosine.
select id, text, token_count from memctx.messages
 where conversation_id = %(conversation_id)s and user_id = %(user_id)s and (embedding is null or token_count is null) and text <> ''
 order by seq
 limit %(limit)s

-- name: set_message_embedding
update memctx.messages
   set embedding = coalesce(embedding, %(embedding)s), token_count = coalesce(token_count, %(token_count)s)
 where id = %(id)s and user_id = %(user_id)s

-- name: get_board
select * from memctx.summary_boards where conversation_id = %(conversation_id)s and user_id = %(user_id)s

-- name: board_pending_messages
select id, external_id, role, text, seq, metadata ->> 'speaker' as speaker, created_at from memctx.messages
 where conversation_id = %(conversation_id)s and user_id = %(user_id)s and seq > %(after_seq)s
 order by seq
 limit %(limit)s

-- name: upsert_board
insert into memctx.summary_boards
  (conversation_id, user_id, current_summary, items, message_count, last_seq, update_frequency, counts, version,
   updated_at)
values
  (%(conversation_id)s, %(user_id)s, %(summary)s, %(items)s, %(message_count)s, %(last_seq)s, %(update_frequency)s,
   %(counts)s, 1, now())
on conflict (conversation_id, user_id) do update
   set current_summary = excluded.current_summary, items = excluded.items,
       message_count = excluded.message_count, last_seq = excluded.last_seq, counts = excluded.counts,
       version = memctx.summary_boards.version + 1, updated_at = now()

-- name: retire_live_summaries
-- A forced regeneration: the live summaries leave the chain (kept as history, superseded by none).
update memctx.summaries set superseded_at = now(), updated_at = now()
 where conversation_id = %(conversation_id)s and user_id = %(user_id)s and superseded_at is null

-- name: delete_board
delete from memctx.summary_boards where conversation_id = %(conversation_id)s and user_id = %(user_id)s

-- name: summary_conversation
select conversation_id from memctx.summaries where id = %(id)s and user_id = %(user_id)s

-- name: edit_summary
update memctx.summaries
   set content = %(content)s, token_count = %(token_count)s, embedding = %(embedding)s, edited = true,
       updated_at = now()
 where id = %(id)s and user_id = %(user_id)s and superseded_at is null
returning id, conversation_id, user_id, level, is_master, content, source_kind, source_ids, first_seq, last_seq,
          token_count, edited, superseded_by, created_at

-- Long-term, cross-session ---------------------------------------------------------------------

-- name: upsert_conversation_summary
insert into memctx.conversation_summaries
  (conversation_id, user_id, summary, key_facts, entities, topics, action_items, pending_questions,
   first_seq, last_seq, token_count, embedding)
values
  (%(conversation_id)s, %(user_id)s, %(summary)s, %(key_facts)s, %(entities)s, %(topics)s, %(action_items)s,
   %(pending_questions)s, %(first_seq)s, %(last_seq)s, %(token_count)s, %(embedding)s)
on conflict (conversation_id, user_id) do update
   set summary = excluded.summary, key_facts = excluded.key_facts, entities = excluded.entities,
       topics = excluded.topics, action_items = excluded.action_items,
       pending_questions = excluded.pending_questions, first_seq = excluded.first_seq,
       last_seq = excluded.last_seq, token_count = excluded.token_count, embedding = excluded.embedding,
       updated_at = now()
returning conversation_id, user_id, summary, key_facts, entities, topics, action_items, pending_questions,
          first_seq, last_seq, token_count, updated_at

-- name: mark_conversation_closed
update memctx.conversations set closed_at = now() where id = %(conversation_id)s and user_id = %(user_id)s

-- name: latest_conversation_summary
-- The user's most recent other conversation that has a long-term summary.
select cs.conversation_id, cs.user_id, cs.summary, cs.key_facts, cs.entities, cs.topics, cs.action_items,
       cs.pending_questions, cs.first_seq, cs.last_seq, cs.token_count, cs.updated_at, c.title,
       c.last_message_at
  from memctx.conversation_summaries cs
  join memctx.conversations c on c.id = cs.conversation_id and c.user_id = cs.user_id
 where cs.user_id = %(user_id)s
   and (%(exclude)s::uuid is null or cs.conversation_id <> %(exclude)s::uuid)
 order by c.last_message_at desc nulls last, cs.updated_at desc
 limit 1

-- name: get_conversation_summary
select conversation_id, user_id, summary, key_facts, entities, topics, action_items, pending_questions,
       first_seq, last_seq, token_count, updated_at
  from memctx.conversation_summaries where conversation_id = %(conversation_id)s and user_id = %(user_id)s
