-- memctx 0001: the whole data model, RLS, the message sequence and outbox triggers.
-- Runs on Postgres 15-18 and on Supabase (which already has auth.uid() and the roles).
-- All objects live in schema memctx so an application's own tables never collide.

create extension if not exists vector;

create schema if not exists memctx;

-- What Supabase provides, created only where it is missing (plain Postgres) -------------------
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'anon') then
    create role anon nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'authenticated') then
    create role authenticated nologin noinherit;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'service_role') then
    create role service_role nologin noinherit bypassrls;
  end if;
end
$$;

create schema if not exists auth;

do $$
begin
  if not exists (
    select 1 from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'auth' and p.proname = 'uid'
  ) then
    -- Same contract as Supabase's: the `sub` claim of the request's JWT claims.
    execute $fn$
      create function auth.uid() returns uuid
      language sql stable
      as $body$
        select coalesce(
          nullif(current_setting('request.jwt.claim.sub', true), ''),
          nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub'
        )::uuid
      $body$
    $fn$;
    execute 'grant usage on schema auth to anon, authenticated, service_role';
    execute 'grant execute on function auth.uid() to anon, authenticated, service_role';
  end if;
end
$$;

-- Which embedding space the vector columns hold ---------------------------------------------
-- Vector columns are created without a dimension; memctx.configure_embedding_space() fixes the
-- dimension and builds the HNSW indexes once, for the embedder configured at first migrate.
create table memctx.embedding_space (
  singleton boolean primary key default true check (singleton),
  model text not null,
  dim integer not null check (dim between 1 and 16000),
  configured_at timestamptz not null default now()
);

-- Tables ------------------------------------------------------------------------------------
create table memctx.conversations (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null,
  external_id text,
  title text,
  metadata jsonb not null default '{}'::jsonb,
  message_count integer not null default 0,
  last_seq bigint not null default 0,
  created_at timestamptz not null default now(),
  last_message_at timestamptz,
  closed_at timestamptz,
  constraint conversations_external_id_key unique (user_id, external_id)
);
create index conversations_user_idx on memctx.conversations (user_id, last_message_at desc);

create table memctx.messages (
  id uuid primary key default gen_random_uuid(),
  conversation_id uuid not null references memctx.conversations (id) on delete cascade,
  user_id uuid not null,
  seq bigint not null,
  role text not null check (role in ('user', 'assistant', 'system', 'tool', 'agent', 'observer')),
  content jsonb not null default '[]'::jsonb check (jsonb_typeof(content) = 'array'),
  text text not null default '',
  external_id text,
  token_count integer check (token_count >= 0),
  embedding vector,
  tsv tsvector generated always as (to_tsvector('english'::regconfig, text)) stored,
  created_at timestamptz not null default now(),
  inserted_at timestamptz not null default now(),
  metadata jsonb not null default '{}'::jsonb,
  constraint messages_seq_key unique (conversation_id, seq),
  constraint messages_external_id_key unique (conversation_id, external_id)
);
create index messages_user_idx on memctx.messages (user_id, conversation_id, seq);
create index messages_tsv_idx on memctx.messages using gin (tsv);
create index messages_unembedded_idx on memctx.messages (conversation_id, seq) where embedding is null;

create table memctx.summaries (
  id uuid primary key default gen_random_uuid(),
  conversation_id uuid not null references memctx.conversations (id) on delete cascade,
  user_id uuid not null,
  level smallint not null check (level >= 1),
  is_master boolean not null default false,
  content text not null,
  source_kind text not null check (source_kind in ('message', 'summary')),
  source_ids uuid[] not null check (cardinality(source_ids) >= 1),
  first_seq bigint not null,
  last_seq bigint not null,
  token_count integer check (token_count >= 0),
  embedding vector,
  tsv tsvector generated always as (to_tsvector('english'::regconfig, content)) stored,
  summarizer text not null default 'extractive',
  edited boolean not null default false,
  superseded_by uuid references memctx.summaries (id) on delete set null,
  superseded_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  metadata jsonb not null default '{}'::jsonb,
  check (first_seq <= last_seq)
);
create index summaries_live_idx on memctx.summaries (conversation_id, level, first_seq)
  where superseded_at is null;
create index summaries_user_idx on memctx.summaries (user_id, conversation_id);
create index summaries_tsv_idx on memctx.summaries using gin (tsv);

create table memctx.summary_boards (
  conversation_id uuid primary key references memctx.conversations (id) on delete cascade,
  user_id uuid not null,
  current_summary text not null default '',
  context_notes text not null default '',
  key_facts jsonb not null default '[]'::jsonb,
  entities jsonb not null default '{}'::jsonb,
  topics jsonb not null default '[]'::jsonb,
  action_items jsonb not null default '[]'::jsonb,
  pending_questions jsonb not null default '[]'::jsonb,
  constraints jsonb not null default '[]'::jsonb,
  message_count integer not null default 0,
  last_seq bigint not null default 0,
  update_frequency integer not null default 5 check (update_frequency >= 1),
  version integer not null default 0,
  updated_at timestamptz not null default now()
);
create index summary_boards_user_idx on memctx.summary_boards (user_id);

create table memctx.working_memory_chunks (
  id uuid primary key default gen_random_uuid(),
  conversation_id uuid not null references memctx.conversations (id) on delete cascade,
  user_id uuid not null,
  chunk_text text not null,
  message_ids uuid[] not null default '{}',
  importance real not null default 0.5 check (importance between 0 and 1),
  chunk_type text not null default 'context',
  token_count integer check (token_count >= 0),
  embedding vector,
  expires_at timestamptz,
  created_at timestamptz not null default now()
);
create index working_memory_chunks_conv_idx on memctx.working_memory_chunks (conversation_id, created_at);
create index working_memory_chunks_user_idx on memctx.working_memory_chunks (user_id);

create table memctx.conversation_summaries (
  conversation_id uuid primary key references memctx.conversations (id) on delete cascade,
  user_id uuid not null,
  summary text not null,
  key_facts jsonb not null default '[]'::jsonb,
  entities jsonb not null default '{}'::jsonb,
  topics jsonb not null default '[]'::jsonb,
  action_items jsonb not null default '[]'::jsonb,
  pending_questions jsonb not null default '[]'::jsonb,
  first_seq bigint not null default 0,
  last_seq bigint not null default 0,
  token_count integer check (token_count >= 0),
  embedding vector,
  tsv tsvector generated always as (to_tsvector('english'::regconfig, summary)) stored,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index conversation_summaries_user_idx on memctx.conversation_summaries (user_id, updated_at desc);
create index conversation_summaries_tsv_idx on memctx.conversation_summaries using gin (tsv);

-- Pending background work: one row per inserted message, written by a trigger so that rows
-- inserted by any client (plain SQL, the Supabase client) reach the worker.
create table memctx.outbox (
  id bigint generated always as identity primary key,
  user_id uuid not null,
  conversation_id uuid not null references memctx.conversations (id) on delete cascade,
  kind text not null default 'message' check (kind in ('message', 'summarize', 'close')),
  message_id uuid,
  seq bigint,
  created_at timestamptz not null default now(),
  claimed_at timestamptz,
  claimed_by text,
  processed_at timestamptz,
  attempts integer not null default 0,
  last_error text
);
create index outbox_pending_idx on memctx.outbox (conversation_id, id) where processed_at is null;
create index outbox_user_idx on memctx.outbox (user_id);

-- Triggers ----------------------------------------------------------------------------------
-- Every message gets the next sequence number of its conversation. Taking it from the
-- conversation row serializes concurrent inserts into one conversation, so seq order is
-- insert order, with no gaps, from any client.
create function memctx.messages_assign_seq() returns trigger
language plpgsql
set search_path = ''
as $$
declare
  conv_user uuid;
begin
  update memctx.conversations c
     set last_seq = c.last_seq + 1,
         message_count = c.message_count + 1,
         last_message_at = greatest(coalesce(c.last_message_at, new.created_at), new.created_at)
   where c.id = new.conversation_id
  returning c.last_seq, c.user_id into new.seq, conv_user;
  if not found then
    raise foreign_key_violation using message = format('conversation %s does not exist', new.conversation_id);
  end if;
  if new.user_id is null then
    new.user_id := conv_user;
  elsif new.user_id <> conv_user then
    raise insufficient_privilege using message = 'message user_id differs from its conversation''s user_id';
  end if;
  return new;
end
$$;

create trigger messages_assign_seq
  before insert on memctx.messages
  for each row execute function memctx.messages_assign_seq();

-- One outbox row per message and one NOTIFY per conversation and statement, so a batch insert
-- wakes the worker once per conversation rather than once per row.
create function memctx.messages_enqueue() returns trigger
language plpgsql
set search_path = ''
as $$
declare
  conv record;
begin
  insert into memctx.outbox (user_id, conversation_id, kind, message_id, seq)
  select n.user_id, n.conversation_id, 'message', n.id, n.seq from new_rows n order by n.seq;
  for conv in select distinct n.conversation_id from new_rows n loop
    perform pg_notify('memctx_outbox', conv.conversation_id::text);
  end loop;
  return null;
end
$$;

create trigger messages_enqueue
  after insert on memctx.messages
  referencing new table as new_rows
  for each statement execute function memctx.messages_enqueue();

-- Embedding space ---------------------------------------------------------------------------
-- Fix the vector dimension and build the HNSW cosine indexes (m=16, ef_construction=64) the
-- first time; afterwards only check that the caller's embedder matches the database.
create function memctx.configure_embedding_space(p_model text, p_dim integer) returns void
language plpgsql
set search_path = memctx, public, extensions
as $$
declare
  current_space memctx.embedding_space;
  tbl text;
  storage text;
begin
  select * into current_space from memctx.embedding_space for update;
  if found then
    if current_space.model <> p_model or current_space.dim <> p_dim then
      raise exception using
        errcode = 'invalid_parameter_value',
        message = format('database holds %s-dimensional embeddings of model %s; the configured embedder is %s with %s dimensions',
                         current_space.dim, current_space.model, p_model, p_dim),
        hint = 'configure the same embedder, or re-embed into a new database';
    end if;
    return;
  end if;
  -- Small vectors stay in the row (an exact scan then reads no TOAST); large ones may move out.
  storage := case when p_dim <= 512 then 'plain' else 'main' end;
  foreach tbl in array array['messages', 'summaries', 'working_memory_chunks', 'conversation_summaries'] loop
    execute format('alter table memctx.%I alter column embedding type vector(%s)', tbl, p_dim);
    execute format('alter table memctx.%I alter column embedding set storage %s', tbl, storage);
    if p_dim <= 2000 then
      execute format('create index %I on memctx.%I using hnsw (embedding vector_cosine_ops) with (m = 16, ef_construction = 64)',
                     tbl || '_embedding_hnsw', tbl);
    end if;
  end loop;
  insert into memctx.embedding_space (model, dim) values (p_model, p_dim);
end
$$;

-- Row-level security ------------------------------------------------------------------------
-- A user reads and writes only rows whose user_id is auth.uid(); service_role bypasses RLS.
do $$
declare
  tbl text;
begin
  foreach tbl in array array['conversations', 'messages', 'summaries', 'summary_boards',
                             'working_memory_chunks', 'conversation_summaries', 'outbox'] loop
    execute format('alter table memctx.%I enable row level security', tbl);
    execute format('create policy %I on memctx.%I for all to authenticated using (user_id = auth.uid()) with check (user_id = auth.uid())',
                   tbl || '_owner', tbl);
    execute format('grant select, insert, update, delete on memctx.%I to authenticated, service_role', tbl);
  end loop;
end
$$;

alter table memctx.embedding_space enable row level security;
create policy embedding_space_read on memctx.embedding_space for select to authenticated, anon using (true);
grant select on memctx.embedding_space to anon, authenticated, service_role;
grant usage on schema memctx to authenticated, service_role, anon;
grant usage, select on all sequences in schema memctx to authenticated, service_role;
