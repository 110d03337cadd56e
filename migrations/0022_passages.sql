-- memctx 0022: long messages are also stored as passages, in working_memory_chunks.
--
-- A passage is a stretch of one message's text (a chat assistant's reply of several hundred
-- tokens is embedded by its first 256 word pieces only, and is too long to bring into a context
-- for one relevant paragraph). The worker's catch-up cuts every message over
-- MEMCTX_PASSAGE_MIN_TOKENS into passages, embeds them and stores them here (chunk_type
-- 'passage'): the message's id, the passage's number in it and its text, a verbatim substring
-- of the message's. Memory search ranks a message by its best passage as well as by itself
-- (dense only: the message's own lexemes already cover all of its text, so passages carry none),
-- and a context can show that passage as a cited excerpt of the message.
--
--  * (message_id, user_id) references the message (its primary key, 0012): a deleted message
--    takes its passages with it, and the key holds user_id as Citus needs.
--  * one row per (message, part); a message whose text changes loses its passages (trigger), so
--    the next catch-up cuts the new text.
--  * conversations that hold a message long enough get a 'summarize' request, so that a worker
--    cuts what was stored before this migration (the evaluation's catch-up does it directly).
--  * the new columns are granted to `authenticated` as 0005 grants the table's others; the
--    table's row-level security (0005) already confines a tenant to its own rows.

alter table memctx.working_memory_chunks
  add column message_id uuid,
  add column part smallint check (part >= 0),
  add constraint working_memory_chunks_passage_check
    check ((message_id is null) = (part is null) and (message_id is null or chunk_type = 'passage'));

alter table memctx.working_memory_chunks
  add constraint working_memory_chunks_message_fkey foreign key (message_id, user_id)
    references memctx.messages (id, user_id) on delete cascade;

create unique index working_memory_chunks_passage_key
  on memctx.working_memory_chunks (message_id, part, user_id) where message_id is not null;
-- The passages of a user's (or one conversation's) scope, read by every memory search.
create index working_memory_chunks_scope_idx
  on memctx.working_memory_chunks (user_id, conversation_id) where message_id is not null;

grant insert (message_id, part), update (message_id, part) on memctx.working_memory_chunks to authenticated;

-- A message whose text changed is cut again: its old passages go.
create function memctx.messages_drop_passages() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  delete from memctx.working_memory_chunks p
   where p.message_id = new.id and p.user_id = new.user_id;
  return null;
end
$$;

create trigger messages_drop_passages
  after update of text on memctx.messages
  for each row when (old.text is distinct from new.text)
  execute function memctx.messages_drop_passages();

-- What was stored before: ask the worker to catch up the conversations with a message over the
-- default MEMCTX_PASSAGE_MIN_TOKENS (a lower setting is caught up as conversations get new messages).
insert into memctx.outbox (user_id, conversation_id, kind)
select distinct m.user_id, m.conversation_id, 'summarize'
  from memctx.messages m
 where m.token_count > 200;
