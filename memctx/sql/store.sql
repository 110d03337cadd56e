-- Message store: conversations and messages, always scoped by user_id.

-- name: upsert_conversation
-- Get-or-create by (user_id, external_id); a conversation without external id is always new.
with found as (
  select * from memctx.conversations
   where user_id = %(user_id)s::uuid and external_id = %(external_id)s::text
), created as (
  insert into memctx.conversations (user_id, external_id, title, metadata)
  select %(user_id)s::uuid, %(external_id)s::text, %(title)s::text, %(metadata)s::jsonb
   where not exists (select 1 from found)
  on conflict (user_id, external_id) do nothing
  returning *
)
select * from found union all select * from created

-- name: get_conversation
select * from memctx.conversations where id = %(conversation_id)s and user_id = %(user_id)s

-- name: find_conversation
-- Named by its memctx id (when the name is a UUID) or by its external id; the memctx id wins.
select * from memctx.conversations
 where user_id = %(user_id)s and (id = %(as_uuid)s::uuid or external_id = %(name)s::text)
 order by id = %(as_uuid)s::uuid desc nulls last
 limit 1

-- name: list_conversations
select * from memctx.conversations where user_id = %(user_id)s
 order by coalesce(last_message_at, created_at) desc, id
 limit %(limit)s offset %(offset)s

-- name: existing_external_ids
select external_id from memctx.messages
 where conversation_id = %(conversation_id)s and user_id = %(user_id)s and external_id = any(%(external_ids)s::text[])

-- name: list_messages
select id, conversation_id, user_id, seq, role, content, text, external_id, token_count, created_at,
       metadata, embedding is not null as has_embedding
  from memctx.messages
 where conversation_id = %(conversation_id)s and user_id = %(user_id)s and seq > %(after_seq)s
 order by seq
 limit %(limit)s

-- name: last_message
-- The conversation's last message (read backwards from (user_id, conversation_id, seq)), without
-- locking the conversation as `lock_conversation_seq` does: a context call only reads it.
select id, conversation_id, user_id, seq, role, content, text, external_id, token_count, created_at,
       metadata, embedding is not null as has_embedding
  from memctx.messages
 where user_id = %(user_id)s and conversation_id = %(conversation_id)s
 order by seq desc
 limit 1

-- name: delete_conversation
delete from memctx.conversations where id = %(conversation_id)s and user_id = %(user_id)s returning id

-- name: lock_user
-- The user's lock, held to the end of the transaction. forget_user takes it first, and so does
-- a write of rows that hang off no conversation (search_cache_put): such a write either lands
-- before the user is forgotten (and is deleted with the rest) or finds them gone.
select pg_advisory_xact_lock(hashtextextended('memctx.user:' || %(user_id)s::text, 0))

-- name: forget_user
-- Conversations cascade to every table that hangs off them (and messages to message_codes,
-- which a caller may read but not write); rows without a conversation reference are deleted by
-- user_id directly. Returns what was deleted per table. The user's API
-- keys go in forget_user_keys, a statement of its own: api_keys is a reference table on Citus
-- (copied to every node), and one statement cannot modify it and the user's shard together.
with c as (delete from memctx.conversations where user_id = %(user_id)s returning id),
     m as (delete from memctx.messages where user_id = %(user_id)s returning id),
     s as (delete from memctx.summaries where user_id = %(user_id)s returning id),
     b as (delete from memctx.summary_boards where user_id = %(user_id)s returning conversation_id),
     w as (delete from memctx.working_memory_chunks where user_id = %(user_id)s returning id),
     l as (delete from memctx.conversation_summaries where user_id = %(user_id)s returning conversation_id),
     o as (delete from memctx.outbox where user_id = %(user_id)s returning id),
     r as (delete from memctx.context_requests where user_id = %(user_id)s returning id),
     i as (delete from memctx.idempotency_keys where user_id = %(user_id)s returning key),
     x as (delete from memctx.search_cache where user_id = %(user_id)s returning fingerprint),
     p as (delete from memctx.profile_items where user_id = %(user_id)s returning id),
     ps as (delete from memctx.profile_sources where user_id = %(user_id)s returning item_id),
     pp as (delete from memctx.profile_progress where user_id = %(user_id)s returning conversation_id),
     t as (delete from memctx.procedures where user_id = %(user_id)s returning id),
     ts as (delete from memctx.procedure_sources where user_id = %(user_id)s returning procedure_id),
     f as (delete from memctx.feedback where user_id = %(user_id)s returning id)
select (select count(*) from c) as conversations, (select count(*) from m) as messages,
       (select count(*) from s) as summaries, (select count(*) from b) as summary_boards,
       (select count(*) from w) as working_memory_chunks, (select count(*) from l) as conversation_summaries,
       (select count(*) from o) as outbox,
       (select count(*) from r) as context_requests, (select count(*) from i) as idempotency_keys,
       (select count(*) from x) as search_cache, (select count(*) from p) as profile_items,
       (select count(*) from ps) as profile_sources, (select count(*) from pp) as profile_progress,
       (select count(*) from t) as procedures, (select count(*) from ts) as procedure_sources,
       (select count(*) from f) as feedback

-- name: fill_message_terms
-- The full-text rows (migration 0026) of messages that have none: what a bulk import that writes
-- messages with triggers off (session_replication_role = replica) runs after it.
insert into memctx.message_terms (message_id, user_id, conversation_id, seq, created_at, lexemes, tsv)
select m.id, m.user_id, m.conversation_id, m.seq, m.created_at, coalesce(m.lexemes, length(m.tsv)), m.tsv
  from memctx.messages m
 where m.tsv <> ''::tsvector
    on conflict do nothing

-- name: fill_message_codes
-- The sign-bit codes (migration 0023) of embedded messages that have none: what a bulk import
-- that writes messages with triggers off (session_replication_role = replica) runs after it.
insert into memctx.message_codes (message_id, user_id, conversation_id, created_at, bits)
select m.id, m.user_id, m.conversation_id, m.created_at, binary_quantize(m.embedding)::varbit
  from memctx.messages m
 where m.embedding is not null
    on conflict do nothing

-- name: user_without_lexemes
-- A user with messages stored before migration 0025 (a null lexeme count), for
-- `fill_message_lexemes`, found through 0025's partial index, which holds only those rows.
select m.user_id
  from memctx.messages m
 where m.lexemes is null
 limit 1

-- name: fill_message_lexemes
-- The lexeme counts of up to `limit` of one user's messages stored before migration 0025; rows
-- another filler holds are skipped. Setting the count fires the trigger messages_lexemes, which
-- counts the row's text (a null count is never kept). Each row updated may be a new row version
-- in every index of messages, HNSW included, so a batch is small.
update memctx.messages m
   set lexemes = null
  from (select r.id
          from memctx.messages r
         where r.user_id = %(user_id)s
           and r.lexemes is null
         limit %(limit)s
           for update skip locked) x
 where m.id = x.id
   and m.user_id = %(user_id)s

-- name: forget_user_keys
with k as (delete from memctx.api_keys where user_id = %(user_id)s returning id)
select count(*) as api_keys from k

-- name: user_row_counts
select (select count(*) from memctx.conversations where user_id = %(user_id)s) as conversations,
       (select count(*) from memctx.messages where user_id = %(user_id)s) as messages,
       (select count(*) from memctx.message_codes where user_id = %(user_id)s) as message_codes,
       (select count(*) from memctx.summaries where user_id = %(user_id)s) as summaries,
       (select count(*) from memctx.summary_boards where user_id = %(user_id)s) as summary_boards,
       (select count(*) from memctx.working_memory_chunks where user_id = %(user_id)s) as working_memory_chunks,
       (select count(*) from memctx.conversation_summaries where user_id = %(user_id)s) as conversation_summaries,
       (select count(*) from memctx.outbox where user_id = %(user_id)s) as outbox,
       (select count(*) from memctx.api_keys where user_id = %(user_id)s) as api_keys,
       (select count(*) from memctx.context_requests where user_id = %(user_id)s) as context_requests,
       (select count(*) from memctx.shadow_requests where user_id = %(user_id)s) as shadow_requests,
       (select count(*) from memctx.idempotency_keys where user_id = %(user_id)s) as idempotency_keys,
       (select count(*) from memctx.search_cache where user_id = %(user_id)s) as search_cache,
       (select count(*) from memctx.profile_items where user_id = %(user_id)s) as profile_items,
       (select count(*) from memctx.profile_sources where user_id = %(user_id)s) as profile_sources,
       (select count(*) from memctx.profile_progress where user_id = %(user_id)s) as profile_progress,
       (select count(*) from memctx.procedures where user_id = %(user_id)s) as procedures,
       (select count(*) from memctx.procedure_sources where user_id = %(user_id)s) as procedure_sources,
       (select count(*) from memctx.feedback where user_id = %(user_id)s) as feedback

-- name: conversation_stats
select c.id, c.external_id, c.title, c.message_count,
       count(m.id) filter (where m.embedding is not null) as embedded,
       coalesce(sum(m.token_count), 0) as tokens
  from memctx.conversations c left join memctx.messages m on m.conversation_id = c.id and m.user_id = c.user_id
 where c.user_id = %(user_id)s
 group by c.id, c.user_id order by c.created_at  -- the primary key (0012): external_id etc. follow from it

-- name: copy_messages
copy memctx.messages (conversation_id, user_id, role, content, text, external_id, token_count, embedding,
                      created_at, metadata)
from stdin (format binary)

-- name: insert_message
-- One row of copy_messages, for connections under row-level security (which refuses COPY).
insert into memctx.messages (conversation_id, user_id, role, content, text, external_id, token_count, embedding,
                             created_at, metadata)
values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)

-- name: messages_after
select id, conversation_id, user_id, seq, role, content, text, external_id, token_count, created_at,
       metadata, embedding is not null as has_embedding
  from memctx.messages
 where conversation_id = %(conversation_id)s and user_id = %(user_id)s and seq > %(after_seq)s
 order by seq

-- name: lock_conversation_seq
select last_seq from memctx.conversations
 where id = %(conversation_id)s and user_id = %(user_id)s for update
