-- The learning layer (migration 0030): what memctx learns about its users, always scoped by user_id.

-- Learning -----------------------------------------------------------------------------------

-- name: lock_profile
-- One writer of a user's profile at a time (learning from any of their conversations, an edit, a
-- rating), held to the end of the transaction.
select pg_advisory_xact_lock(hashtextextended('memctx.profile:' || %(user_id)s::text, 0))

-- name: profile_progress
select learned_seq from memctx.profile_progress
 where conversation_id = %(conversation_id)s and user_id = %(user_id)s

-- name: learn_pending_messages
-- The messages after `after_seq` (at most `limit`), and the assistant's and tools' turns of the
-- `lookback` before it: an error's episode may close in the next batch.
select m.id, m.conversation_id, m.seq, m.role, m.metadata ->> 'speaker' as speaker, m.text, m.content,
       m.created_at, m.external_id
  from memctx.messages m
 where m.conversation_id = %(conversation_id)s and m.user_id = %(user_id)s
   and m.seq > %(after_seq)s - %(lookback)s
   and (m.seq > %(after_seq)s or m.role in ('assistant', 'tool'))
 order by m.seq
 limit %(limit)s + %(lookback)s

-- name: save_profile_progress
insert into memctx.profile_progress (conversation_id, user_id, learned_seq, updated_at)
values (%(conversation_id)s, %(user_id)s, %(learned_seq)s, now())
    on conflict (conversation_id, user_id) do update
   set learned_seq = greatest(memctx.profile_progress.learned_seq, excluded.learned_seq), updated_at = now()

-- name: reset_profile_progress
-- A regeneration learns the conversation again: what it finds again adds nothing (a sighting is
-- one source message), what was deleted stays deleted.
delete from memctx.profile_progress where conversation_id = %(conversation_id)s and user_id = %(user_id)s

-- name: insert_profile_item
insert into memctx.profile_items (id, user_id, person, kind, subject, topic, key, value, explicit, status, origin,
                                  confidence, seen_count, overrides, challenger, first_seen, last_seen, replaced_by,
                                  replaced_at, embedding)
values (%(id)s, %(user_id)s, %(person)s, %(kind)s, %(subject)s, %(topic)s, %(key)s, %(value)s, %(explicit)s,
        %(status)s, %(origin)s, %(confidence)s, %(seen_count)s, %(overrides)s, %(challenger)s, %(first_seen)s,
        %(last_seen)s, %(replaced_by)s, %(replaced_at)s, %(embedding)s)

-- name: update_profile_item
-- What learning changes of a stored item: its sightings, confidence, overrides and replacement.
update memctx.profile_items
   set explicit = %(explicit)s, status = %(status)s, confidence = %(confidence)s, seen_count = %(seen_count)s,
       overrides = %(overrides)s, challenger = %(challenger)s, first_seen = %(first_seen)s,
       last_seen = %(last_seen)s, replaced_by = %(replaced_by)s, replaced_at = %(replaced_at)s, updated_at = now()
 where id = %(id)s and user_id = %(user_id)s

-- name: insert_profile_source
insert into memctx.profile_sources (item_id, user_id, message_id, conversation_id, said_at)
values (%(item_id)s, %(user_id)s, %(message_id)s, %(conversation_id)s, %(said_at)s)
    on conflict do nothing

-- name: upsert_procedure
-- A tool's error: its row (the latest fix that worked kept), then its sources, then its counts.
insert into memctx.procedures as p (user_id, tool, error, fix, first_seen, last_seen)
values (%(user_id)s, %(tool)s, %(error)s, coalesce(%(fix)s, ''), %(said_at)s, %(said_at)s)
    on conflict (user_id, tool, error) do update
   set fix = case when excluded.fix <> '' and excluded.last_seen >= p.last_seen then excluded.fix else p.fix end,
       first_seen = least(p.first_seen, excluded.first_seen), last_seen = greatest(p.last_seen, excluded.last_seen),
       updated_at = now()
returning id

-- name: insert_procedure_source
insert into memctx.procedure_sources (procedure_id, user_id, message_id, conversation_id, step, said_at)
values (%(procedure_id)s, %(user_id)s, %(message_id)s, %(conversation_id)s, %(step)s, %(said_at)s)
    on conflict do nothing

-- name: count_procedure
-- Episodes (their first errors) and those a later call resolved: a source counts once, so a
-- catch-up that reads the same messages again counts nothing twice.
update memctx.procedures p
   set seen_count = greatest(1, (select count(*) from memctx.procedure_sources s
                                  where s.procedure_id = p.id and s.user_id = p.user_id and s.step = 'error')),
       resolved = (select count(*) from memctx.procedure_sources s
                    where s.procedure_id = p.id and s.user_id = p.user_id and s.step = 'fix')
 where p.id = %(id)s and p.user_id = %(user_id)s

-- The person's view ---------------------------------------------------------------------------

-- name: list_profile
-- The user's items (by status, person, id; null: any), each with its sources, newest first within
-- each person: what a person sees, and what learning merges a batch into (every status).
select i.id, i.person, i.kind, i.subject, i.topic, i.key, i.value, i.explicit, i.status, i.origin, i.confidence,
       i.seen_count, i.overrides, i.useful, i.first_seen, i.last_seen, i.replaced_by, i.replaced_at, i.edited_at,
       i.deleted_at, i.challenger,
       coalesce((select jsonb_agg(jsonb_build_object('message_id', s.message_id, 'conversation_id', s.conversation_id,
                                                     'said_at', s.said_at, 'external_id', m.external_id)
                                  order by s.said_at)
                   from memctx.profile_sources s
                   join memctx.messages m on m.id = s.message_id and m.user_id = s.user_id
                  where s.item_id = i.id and s.user_id = i.user_id), '[]'::jsonb) as sources
  from memctx.profile_items i
 where i.user_id = %(user_id)s
   and (%(status)s::text is null or i.status = %(status)s::text)
   and (%(person)s::text is null or i.person = %(person)s::text)
   and (%(id)s::uuid is null or i.id = %(id)s::uuid)
 order by i.person, i.status, i.last_seen desc, i.id
 limit %(limit)s

-- name: edit_profile_item
-- The person's words: kept against learning from the item's own sources (merge: "once per message").
update memctx.profile_items
   set value = %(value)s, embedding = %(embedding)s, explicit = true, confidence = 1, edited_at = now(),
       updated_at = now()
 where id = %(id)s and user_id = %(user_id)s and status <> 'deleted'
returning id

-- name: delete_profile_item
-- A tombstone: the item leaves every context and is never learned again; its sources stay so
-- that forgetting them forgets it too.
update memctx.profile_items
   set status = 'deleted', deleted_at = now(), replaced_by = null, replaced_at = null, updated_at = now()
 where id = %(id)s and user_id = %(user_id)s and status <> 'deleted'
returning id

-- name: outdate_profile_item
-- Rated outdated: no longer current, kept as history, replaced by nothing yet.
update memctx.profile_items
   set status = 'replaced', replaced_at = now(), updated_at = now()
 where id = %(id)s and user_id = %(user_id)s and status = 'active'
returning id

-- name: add_profile_item
insert into memctx.profile_items (user_id, person, kind, subject, topic, key, value, explicit, origin, confidence,
                                  seen_count, first_seen, last_seen, edited_at, embedding)
values (%(user_id)s, %(person)s, %(kind)s, %(subject)s, %(topic)s, %(key)s, %(value)s, true, 'user', 1, 0, now(), now(),
        now(), %(embedding)s)
returning id

-- name: list_procedures
select p.id, p.tool, p.error, p.fix, p.seen_count, p.resolved, p.useful, p.first_seen, p.last_seen,
       coalesce((select jsonb_agg(jsonb_build_object('message_id', s.message_id, 'conversation_id', s.conversation_id,
                                                     'said_at', s.said_at, 'external_id', m.external_id, 'step', s.step)
                                  order by s.said_at)
                   from memctx.procedure_sources s
                   join memctx.messages m on m.id = s.message_id and m.user_id = s.user_id
                  where s.procedure_id = p.id and s.user_id = p.user_id), '[]'::jsonb) as sources
  from memctx.procedures p
 where p.user_id = %(user_id)s
   and (%(tools)s::text[] is null or p.tool = any(%(tools)s::text[]))
 order by p.last_seen desc, p.id
 limit %(limit)s

-- Feedback -------------------------------------------------------------------------------------

-- name: rating_target
-- What a rating names, if it is the caller's: its conversation (none for a profile item or a
-- procedure).
select 'message' as kind, m.conversation_id from memctx.messages m
 where %(kind)s = 'message' and m.id = %(id)s and m.user_id = %(user_id)s
union all
select 'summary', s.conversation_id from memctx.summaries s
 where %(kind)s = 'summary' and s.id = %(id)s and s.user_id = %(user_id)s
union all
select 'profile_item', null::uuid from memctx.profile_items i
 where %(kind)s = 'profile_item' and i.id = %(id)s and i.user_id = %(user_id)s
union all
select 'procedure', null::uuid from memctx.procedures p
 where %(kind)s = 'procedure' and p.id = %(id)s and p.user_id = %(user_id)s

-- name: insert_feedback
insert into memctx.feedback (user_id, target_kind, target_id, rating, via, rated_by, conversation_id, note)
values (%(user_id)s, %(kind)s, %(id)s, %(rating)s, %(via)s, %(rated_by)s, %(conversation_id)s, %(note)s)
returning id, created_at

-- name: count_useful
-- A profile item's or a procedure's useful votes, as the feedback table counts them.
update memctx.profile_items i
   set useful = (select count(*) from memctx.feedback f
                  where f.user_id = i.user_id and f.target_kind = 'profile_item' and f.target_id = i.id
                    and f.rating = 'useful'), updated_at = now()
 where %(kind)s = 'profile_item' and i.id = %(id)s and i.user_id = %(user_id)s

-- name: count_useful_procedure
update memctx.procedures p
   set useful = (select count(*) from memctx.feedback f
                  where f.user_id = p.user_id and f.target_kind = 'procedure' and f.target_id = p.id
                    and f.rating = 'useful'), updated_at = now()
 where %(kind)s = 'procedure' and p.id = %(id)s and p.user_id = %(user_id)s

-- name: list_feedback
select id, created_at, rating, target_kind, target_id, via, rated_by, conversation_id, note, target_text
  from memctx.feedback_log
 where user_id = %(user_id)s
 order by created_at desc, id desc
 limit %(limit)s

-- Contexts -------------------------------------------------------------------------------------

-- name: profile_for_context
-- The items that bear on a query: ranked by cosine to its vector, by full text, and by the topics
-- it names, fused by reciprocal rank; the standing instructions always. The best `limit`, each
-- with its source turns (as memory search reads turns) and the items it replaced. Within one
-- conversation's memory (`conversation_id`), only what was learned there or added by hand.
with items as materialized (
  select i.id, i.user_id, i.person, i.kind, i.subject, i.topic, i.key, i.value, i.explicit, i.status, i.origin,
         i.confidence, i.seen_count, i.overrides, i.useful, i.first_seen, i.last_seen, i.replaced_by, i.replaced_at,
         i.edited_at, i.deleted_at, i.tsv,
         case when i.embedding is null or %(query_vec)s::vector is null then null
              else 1 - (i.embedding <=> %(query_vec)s::vector) end as similarity
    from memctx.profile_items i
   where i.user_id = %(user_id)s and i.status = 'active'
     and (%(conversation_id)s::uuid is null or i.origin = 'user'
          or exists (select 1 from memctx.profile_sources s
                      where s.item_id = i.id and s.user_id = i.user_id and s.conversation_id = %(conversation_id)s::uuid))
), dense as (
  select id, row_number() over (order by similarity desc, id) as r
    from items where similarity >= %(min_similarity)s
), lexical as (
  select id, row_number() over (order by ts_rank_cd(tsv, q) desc, id) as r
    from items, to_tsquery('english', %(tsquery)s) q
   where %(tsquery)s <> '' and tsv @@ q
), topical as (
  select id, row_number() over (order by confidence desc, last_seen desc, id) as r
    from items where topic = any(%(topics)s::text[])
), ranked as (
  select i.id, d.r as dense_rank, l.r as lexical_rank, t.r as topic_rank,
         coalesce(1.0 / (%(rrf_k)s + d.r), 0) + coalesce(1.0 / (%(rrf_k)s + l.r), 0)
           + %(topic_weight)s * coalesce(1.0 / (%(rrf_k)s + t.r), 0) as score
    from items i
    left join dense d on d.id = i.id
    left join lexical l on l.id = i.id
    left join topical t on t.id = i.id
   where d.id is not null or l.id is not null or t.id is not null or i.kind = 'instruction'
   order by i.kind = 'instruction' desc, score desc, i.id
   limit %(limit)s
)
select i.id, i.person, i.kind, i.subject, i.topic, i.key, i.value, i.explicit, i.status, i.origin, i.confidence,
       i.seen_count, i.overrides, i.useful, i.first_seen, i.last_seen, i.replaced_by, i.replaced_at, i.edited_at,
       i.deleted_at, i.similarity, r.score, r.dense_rank, r.lexical_rank, r.topic_rank,
       coalesce((select jsonb_agg(jsonb_build_object(
                          'message_id', s.message_id, 'conversation_id', s.conversation_id, 'said_at', s.said_at,
                          'external_id', m.external_id, 'seq', m.seq, 'role', m.role,
                          'speaker', m.metadata ->> 'speaker', 'session', m.metadata ->> 'session', 'text', m.text,
                          'token_count', m.token_count)
                        order by s.said_at)
                   from memctx.profile_sources s
                   join memctx.messages m on m.id = s.message_id and m.user_id = s.user_id
                  where s.item_id = i.id and s.user_id = i.user_id), '[]'::jsonb) as sources,
       coalesce((select jsonb_agg(jsonb_build_object('id', o.id, 'value', o.value, 'first_seen', o.first_seen,
                                                     'replaced_at', o.replaced_at) order by o.replaced_at)
                   from memctx.profile_items o
                  where o.replaced_by = i.id and o.user_id = i.user_id and o.status = 'replaced'), '[]'::jsonb)
         as replaced
  from ranked r
  join items i on i.id = r.id
 order by i.kind = 'instruction' desc, r.score desc, i.id

-- name: profile_replaced_sources
-- The messages of the user's replaced items, with what replaced each and when: a memory quoting
-- one is marked replaced.
select s.message_id, o.value as old_value, n.value as new_value, o.replaced_at
  from memctx.profile_items o
  join memctx.profile_items n on n.id = o.replaced_by and n.user_id = o.user_id and n.status = 'active'
  join memctx.profile_sources s on s.item_id = o.id and s.user_id = o.user_id
 where o.user_id = %(user_id)s and o.status = 'replaced'

-- name: memory_ratings
-- The user's ratings of memories (messages, summaries): counted per memory.
select f.target_id, count(*) filter (where f.rating = 'useful') as useful,
       count(*) filter (where f.rating = 'wrong') as wrong,
       count(*) filter (where f.rating = 'outdated') as outdated,
       max(f.created_at) filter (where f.rating = 'outdated') as outdated_at
  from memctx.feedback f
 where f.user_id = %(user_id)s and f.target_kind in ('message', 'summary')
 group by f.target_id

-- name: procedures_for_tools
select p.id, p.tool, p.error, p.fix, p.seen_count, p.resolved, p.useful, p.first_seen, p.last_seen
  from memctx.procedures p
 where p.user_id = %(user_id)s and p.tool = any(%(tools)s::text[]) and p.fix <> ''

-- name: profile_storage_of
-- What these users' profiles hold, and the bytes (the view memctx.profile_storage).
select user_id, active_items, replaced_items, deleted_items, sources, procedures, bytes
  from memctx.profile_storage
 where user_id = any(%(user_ids)s::uuid[])
