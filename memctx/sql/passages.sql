-- Passages of long messages (migration 0022): what the catch-up cuts and stores.

-- name: uncut_messages
-- A conversation's messages over min_tokens without passages yet, oldest first: the catch-up's
-- work (token_count is set once the message is embedded).
select m.id, m.conversation_id, m.text, m.created_at
  from memctx.messages m
 where m.user_id = %(user_id)s and m.conversation_id = %(conversation_id)s
   and m.token_count > %(min_tokens)s
   and not exists (select 1 from memctx.working_memory_chunks p
                    where p.message_id = m.id and p.user_id = m.user_id)
 order by m.seq
 limit %(limit)s

-- name: insert_passage
-- One passage of a message, said when the message was (so a time-ranged search reads it), and
-- only while the message still has the text it was cut from (md5 of it): a text changed since
-- has dropped its passages (0022's trigger) and is cut again by the next catch-up.
insert into memctx.working_memory_chunks
  (conversation_id, user_id, chunk_text, message_ids, chunk_type, token_count, embedding, created_at,
   message_id, part)
select m.conversation_id, m.user_id, %(text)s, array[m.id], 'passage', %(token_count)s, %(embedding)s,
       m.created_at, m.id, %(part)s
  from memctx.messages m
 where m.id = %(message_id)s and m.user_id = %(user_id)s and md5(m.text) = %(digest)s
on conflict (message_id, part, user_id) where message_id is not null do nothing

-- name: passage_stats
-- What passages cost a user (null: every user): rows, the messages cut, and bytes on disk of
-- their rows (text and vector).
select count(*) as passages, count(distinct p.message_id) as messages,
       coalesce(sum(pg_column_size(p.*)), 0)::bigint as bytes
  from memctx.working_memory_chunks p
 where p.message_id is not null and (%(user_id)s::uuid is null or p.user_id = %(user_id)s::uuid)
