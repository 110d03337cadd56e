-- memctx 0012: every primary key, unique constraint and foreign key of a tenant table holds user_id.
--
-- That is what Citus needs to distribute the tables by user_id (docs/SCALING.md): a distributed
-- table's unique constraints must contain the distribution column, and a foreign key between two
-- distributed tables must join on it. On one server nothing changes for a reader: ids are
-- gen_random_uuid() or identities, so (id) was already unique and (id, user_id) says the same;
-- a conversation has one user, so (conversation_id, seq) and (conversation_id, seq, user_id) do too.
-- The column order keeps each index serving the lookups it served: id first for a fetch by id,
-- (conversation_id, seq) first for a walk through a conversation. tests/migration/test_citus_ready.py
-- checks the catalog so that a later table cannot lose the property unnoticed.
--
-- Cost on existing data: each changed key's index is rebuilt and the foreign keys to conversations
-- are checked again, under an exclusive lock, in one transaction (see docs/SCALING.md for the
-- measured time).

-- Conversations: the key every tenant table references, (id, user_id), becomes the primary key.
-- The foreign keys to it hold on to the unique index they were built on, so they go and come
-- back around the change of keys. Every one-column primary key gains user_id after its column
-- (summary_boards and conversation_summaries hold one row per conversation: the upserts in
-- memctx/sql/summaries.sql name (conversation_id, user_id)).
do $$
declare
  referencing text[] := array['messages', 'summaries', 'summary_boards', 'working_memory_chunks',
                              'conversation_summaries', 'outbox', 'context_requests', 'idempotency_keys'];
  tbl text;
  pk text[];
begin
  foreach tbl in array referencing loop
    execute format('alter table memctx.%I drop constraint %I', tbl, tbl || '_conversation_fkey');
  end loop;
  alter table memctx.conversations drop constraint conversations_id_user_key;
  foreach pk slice 1 in array array[['conversations', 'id'], ['messages', 'id'], ['summaries', 'id'],
                                    ['working_memory_chunks', 'id'], ['outbox', 'id'], ['context_requests', 'id'],
                                    ['summary_boards', 'conversation_id'], ['conversation_summaries', 'conversation_id']] loop
    execute format('alter table memctx.%1$I drop constraint %2$I, add constraint %2$I primary key (%3$I, user_id)',
                   pk[1], pk[1] || '_pkey', pk[2]);
  end loop;
  foreach tbl in array referencing loop
    execute format('alter table memctx.%I add constraint %I foreign key (conversation_id, user_id)
                      references memctx.conversations (id, user_id) on delete cascade on update cascade',
                   tbl, tbl || '_conversation_fkey');
  end loop;
end
$$;

-- Messages: a conversation's walk by seq still reads (conversation_id, seq) first.
alter table memctx.messages
  drop constraint messages_seq_key,
  add constraint messages_seq_key unique (conversation_id, seq, user_id),
  drop constraint messages_external_id_key,
  add constraint messages_external_id_key unique (conversation_id, external_id, user_id);

-- Summaries: a summary is still superseded only by a summary of its own conversation (0005).
alter table memctx.summaries drop constraint summaries_superseded_by_fkey;
alter table memctx.summaries
  drop constraint summaries_id_conversation_key,
  add constraint summaries_id_conversation_key unique (id, conversation_id, user_id);
alter table memctx.summaries add constraint summaries_superseded_by_fkey
  foreign key (superseded_by, conversation_id, user_id) references memctx.summaries (id, conversation_id, user_id)
  on delete set null (superseded_by);

drop index memctx.summaries_one_live_master_idx;
create unique index summaries_one_live_master_idx on memctx.summaries (conversation_id, user_id)
  where is_master and superseded_at is null;
