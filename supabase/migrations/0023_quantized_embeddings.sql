-- memctx 0023: every embedded message has a code of its embedding's sign bits, so that a search
-- over a large user's memory takes its dense pool from a scan of 48-byte codes instead of 1.5 kB
-- vectors.
--
-- Past the exact scan, a user-wide search read the dense list from a scan of every one of the
-- user's vectors (the bounded plan) or from the HNSW index under the user's filter (the index
-- plan), which visits other users' rows and, on a large table, reads them from disk: 851 ms for a
-- heavy user on 1M messages (docs/SCALING.md) unless an operator built that user an index. Now
-- memctx.message_codes holds pgvector's binary_quantize of each embedding (one bit per
-- dimension, its sign) under (user_id, conversation_id), and one index-only range scan ranks all
-- of a user's codes by Hamming distance; the nearest 1,000 are rescored with their full vectors
-- (`search_dense_quantized` in memctx/sql/retrieve.sql). No index per user, nothing to build
-- when a user grows: a message's code is written with it.
--
-- A table of its own, not a column of messages: filling a new column rewrites every message
-- (a new row version in every index, the HNSW graph included: ~10 minutes for 200,000 messages
-- here), while this table is filled in one pass that reads messages and writes ~100 bytes a row.
-- Its codes have no fixed length (varbit): configure_embedding_space sets the vectors' dimension
-- after the migrations. They follow the messages whoever writes them (the store, plain SQL
-- inserts, the worker's embedding update) through statement-level triggers that run as their
-- owner: `authenticated` may read its own codes (RLS) but not write one, so no client can store
-- a code that disagrees with its vector. A message's deletion (forget_user, a conversation's)
-- takes its code along. A bulk import with triggers off (session_replication_role = replica)
-- writes no code: it fills them as the last statement below does.

create table memctx.message_codes (
  message_id uuid not null,
  user_id uuid not null,
  conversation_id uuid not null,
  created_at timestamptz not null,
  bits varbit not null,
  constraint message_codes_pkey primary key (message_id, user_id),
  constraint message_codes_message_fkey foreign key (message_id, user_id)
    references memctx.messages (id, user_id) on delete cascade
);
alter table memctx.message_codes enable row level security;
create policy message_codes_owner on memctx.message_codes for select to authenticated
  using (user_id = (select auth.uid()));
grant select on memctx.message_codes to authenticated;
grant select, insert, update, delete on memctx.message_codes to service_role;

-- After an insert, or an update (the worker's embedding, a changed text that drops it, a moved
-- date): the codes of the rows written, rewritten where they changed. One function for both
-- triggers (a trigger with transition tables fires on one event). Every update, not `update of
-- embedding`: configure_embedding_space alters that column's type, which a trigger's column list
-- would forbid. It runs as its owner, so its search_path is pinned to pg_catalog and the schema
-- pgvector was installed in (public, or Supabase's `extensions`, where a tenant may not create
-- a function of the same name).
do $do$
begin
  execute format($f$
    create function memctx.message_codes_write() returns trigger
    language plpgsql
    security definer
    set search_path = pg_catalog, %I
    as $$
    begin
      delete from memctx.message_codes c
       using new_rows r
       where c.message_id = r.id and c.user_id = r.user_id and r.embedding is null;
      insert into memctx.message_codes as c (message_id, user_id, conversation_id, created_at, bits)
      select r.id, r.user_id, r.conversation_id, r.created_at, binary_quantize(r.embedding)::varbit
        from new_rows r
       where r.embedding is not null
          on conflict (message_id, user_id) do update
         set conversation_id = excluded.conversation_id, created_at = excluded.created_at, bits = excluded.bits
       where (c.conversation_id, c.created_at, c.bits) is distinct from
             (excluded.conversation_id, excluded.created_at, excluded.bits);
      return null;
    end
    $$
  $f$, (select n.nspname from pg_extension e join pg_namespace n on n.oid = e.extnamespace where e.extname = 'vector'));
end
$do$;

create trigger messages_codes_insert
  after insert on memctx.messages
  referencing new table as new_rows
  for each statement execute function memctx.message_codes_write();

create trigger messages_codes_update
  after update on memctx.messages
  referencing new table as new_rows
  for each statement execute function memctx.message_codes_write();

-- The codes of the messages stored so far.
insert into memctx.message_codes (message_id, user_id, conversation_id, created_at, bits)
select m.id, m.user_id, m.conversation_id, m.created_at, binary_quantize(m.embedding)::varbit
  from memctx.messages m
 where m.embedding is not null
    on conflict do nothing;

-- A user's codes (or one conversation's), read by an index-only scan.
create index message_codes_user_idx on memctx.message_codes (user_id, conversation_id)
  include (message_id, created_at, bits);
