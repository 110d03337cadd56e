-- memctx 0026: the full-text index and what the full-text list reads of a match live in a narrow
-- table of their own, so that a match costs a read of ~350 bytes instead of a message's row.
--
-- Past the exact scan, the full-text list (`search_lexical_bounded` in memctx/sql/retrieve.sql)
-- reads each query term's matches in the scope, at most k_match, and needs of each its
-- conversation, position and length. GIN returns no column, so every match was a heap fetch of
-- its message's row: ~2.5 kB with a 1.5 kB vector, four to a page, so a heavy user's matches were
-- spread over as many pages as matches, mostly not in shared_buffers. A common word matches
-- thousands of a heavy user's turns (bench/scale.py's 200,000-message realistic table: "keep"
-- 13,695 of 100,000), and the questions with such words were the heavy user's slowest. Here a
-- match is a row of message_terms (message_id, user_id, conversation_id, seq, created_at,
-- lexemes, tsv), ~350 bytes, and the heavy user's matches took 8.8 / 23.5 ms p50 / p95 against
-- 20.8 / 56.0 ms from messages (60 questions, docs/BENCHMARKS.md, "Scale").
--
-- The GIN index moves here: (user_id, conversation_id, tsv) through btree_gin where the server
-- has it (0014), on tsv alone where it does not. Nothing else searched messages' own GIN, so it
-- is dropped: every write still maintains one full-text index, on a narrower table.
--
-- A message whose tsvector is empty (no text, no date lexemes) has no row. Rows follow the
-- messages whoever writes them (the store, plain SQL inserts, an edited text or date), through
-- triggers that run as their owner, as 0023's codes do: `authenticated` may read
-- its own rows (RLS) but write none. A message's deletion takes its row along. A bulk import with
-- triggers off (session_replication_role = replica) writes none: it fills them as the insert
-- below does (`fill_message_terms` in memctx/sql/store.sql). lexemes is the tsvector's length:
-- 0025's count where the message has one, counted here where it has not.

create table memctx.message_terms (
  message_id uuid not null,
  user_id uuid not null,
  conversation_id uuid not null,
  seq bigint not null,
  created_at timestamptz not null,
  lexemes integer not null,
  tsv tsvector not null,
  constraint message_terms_pkey primary key (message_id, user_id),
  constraint message_terms_message_fkey foreign key (message_id, user_id)
    references memctx.messages (id, user_id) on delete cascade
);
alter table memctx.message_terms enable row level security;
create policy message_terms_owner on memctx.message_terms for select to authenticated
  using (user_id = (select auth.uid()));
grant select on memctx.message_terms to authenticated;
grant select, insert, update, delete on memctx.message_terms to service_role;

-- After an insert: the rows of the messages written, in one statement (an append is one COPY).
create function memctx.message_terms_insert() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  insert into memctx.message_terms (message_id, user_id, conversation_id, seq, created_at, lexemes, tsv)
  select r.id, r.user_id, r.conversation_id, r.seq, r.created_at, coalesce(r.lexemes, pg_catalog.length(r.tsv)), r.tsv
    from new_rows r
   where r.tsv <> ''::pg_catalog.tsvector;
  return null;
end
$$;

create trigger messages_terms_insert
  after insert on memctx.messages
  referencing new table as new_rows
  for each statement execute function memctx.message_terms_insert();

-- After an update of what the row is made of (the text, the content the text may be derived
-- from, the date, the position): the message's row rewritten, or removed when its tsvector
-- became empty. A row trigger with a column list, so the worker's embeddings and the idle
-- lexeme counts, which change none of these, neither fire it nor touch (lock) a row here.
create function memctx.message_terms_update() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  if new.tsv = ''::pg_catalog.tsvector then
    delete from memctx.message_terms t where t.message_id = new.id and t.user_id = new.user_id;
  else
    insert into memctx.message_terms as t (message_id, user_id, conversation_id, seq, created_at, lexemes, tsv)
    values (new.id, new.user_id, new.conversation_id, new.seq, new.created_at,
            coalesce(new.lexemes, pg_catalog.length(new.tsv)), new.tsv)
        on conflict (message_id, user_id) do update
       set conversation_id = excluded.conversation_id, seq = excluded.seq, created_at = excluded.created_at,
           lexemes = excluded.lexemes, tsv = excluded.tsv;
  end if;
  return null;
end
$$;

create trigger messages_terms_update
  after update of content, text, created_at, conversation_id, seq on memctx.messages
  for each row execute function memctx.message_terms_update();

-- The rows of the messages stored so far, then the index (faster built after than kept during).
insert into memctx.message_terms (message_id, user_id, conversation_id, seq, created_at, lexemes, tsv)
select m.id, m.user_id, m.conversation_id, m.seq, m.created_at, coalesce(m.lexemes, length(m.tsv)), m.tsv
  from memctx.messages m
 where m.tsv <> ''::tsvector
    on conflict do nothing;

do $$
begin
  if exists (select from pg_extension where extname = 'btree_gin') then
    create index message_terms_scope_tsv_idx on memctx.message_terms using gin (user_id, conversation_id, tsv);
  else
    create index message_terms_tsv_idx on memctx.message_terms using gin (tsv);
  end if;
end
$$;
drop index if exists memctx.messages_scope_tsv_idx;
drop index if exists memctx.messages_tsv_idx;
