-- memctx 0030: what memctx learns about its users: a profile per user, tool procedures, and the
-- ratings a caller gives to what a context brought.
--
--  * profile_items: one row per thing learned about a person of the user's conversations (the
--    user, or a named speaker): its kind (fact, preference, instruction, plan), whose it is
--    (`person`), what it is about (`subject`: 'self' or a relation such as 'sister'; `topic`:
--    diet, home, work …), the slot a later statement replaces (`key`), its value in plain words,
--    whether it was said outright (`explicit`) or inferred from behaviour, a confidence, how often
--    it was seen and overridden, when it was first and last seen, and what replaced it. A replaced
--    item stays as history (status 'replaced', `replaced_by`, `replaced_at`). An item the person
--    deleted, or rated wrong, stays as a tombstone (status 'deleted') so that learning from the
--    same sources never brings it back; an item the person edited keeps their words.
--  * profile_sources: the messages each item was learned from, always (an item added by hand,
--    origin 'user', has none). A message's deletion (its conversation's, its user's) takes its
--    rows along, and an item learned from messages that are all gone goes with them (trigger),
--    bringing back what it had replaced.
--  * profile_progress: per conversation, the last message learned from, so that a catch-up after
--    a crash learns nothing twice (a sighting is also counted once per source message).
--  * procedures and procedure_sources: from agents' tool calls, an error of a tool followed by a
--    later successful call of the same tool: what worked, how often the error was seen and how
--    often a later call succeeded, sourced.
--  * feedback: every rating (useful / wrong / outdated) of a profile item, a memory (message or
--    summary) or a procedure, with who gave it, through which door and when. The view
--    feedback_log shows them with what was rated; profile_storage the profile's size per user.
--
-- Every table carries user_id in its keys (0012: Citus) and row-level security like every other.
-- The embedding of an item has no fixed dimension: items are few per user and scanned exactly.

create table memctx.profile_items (
  id uuid not null default gen_random_uuid(),
  user_id uuid not null,
  person text not null check (length(person) between 1 and 200),
  kind text not null check (kind in ('fact', 'preference', 'instruction', 'plan')),
  subject text not null check (length(subject) between 1 and 200),
  topic text not null check (length(topic) between 1 and 100),
  key text not null check (length(key) between 1 and 600),
  value text not null check (length(value) between 1 and 2000),
  explicit boolean not null default true,
  status text not null default 'active' check (status in ('active', 'replaced', 'deleted')),
  origin text not null default 'learned' check (origin in ('learned', 'user')),
  confidence real not null check (confidence >= 0 and confidence <= 1),
  seen_count integer not null default 1 check (seen_count >= 0),
  overrides integer not null default 0 check (overrides >= 0),
  -- an inferred item's competing value while it has not won yet: {"value", "count", "sources"}
  challenger jsonb,
  useful integer not null default 0 check (useful >= 0),
  first_seen timestamptz not null,
  last_seen timestamptz not null,
  replaced_by uuid,
  replaced_at timestamptz,
  edited_at timestamptz,
  deleted_at timestamptz,
  embedding vector,
  tsv tsvector generated always as (to_tsvector('english'::regconfig, topic || ' ' || value)) stored,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint profile_items_pkey primary key (id, user_id),
  constraint profile_items_status_check2 check ((status = 'replaced') = (replaced_at is not null))
);
create index profile_items_user_idx on memctx.profile_items (user_id, status, person);
create index profile_items_replaced_idx on memctx.profile_items (replaced_by, user_id) where replaced_by is not null;

create table memctx.profile_sources (
  item_id uuid not null,
  user_id uuid not null,
  message_id uuid not null,
  conversation_id uuid not null,
  said_at timestamptz not null,
  constraint profile_sources_pkey primary key (item_id, message_id, user_id),
  constraint profile_sources_item_fkey foreign key (item_id, user_id)
    references memctx.profile_items (id, user_id) on delete cascade,
  constraint profile_sources_message_fkey foreign key (message_id, user_id)
    references memctx.messages (id, user_id) on delete cascade
);
-- a deleted message's rows, found by the foreign key's cascade
create index profile_sources_message_idx on memctx.profile_sources (message_id, user_id);

create table memctx.profile_progress (
  conversation_id uuid not null,
  user_id uuid not null,
  learned_seq bigint not null default 0,
  updated_at timestamptz not null default now(),
  constraint profile_progress_pkey primary key (conversation_id, user_id),
  constraint profile_progress_conversation_fkey foreign key (conversation_id, user_id)
    references memctx.conversations (id, user_id) on delete cascade on update cascade
);

create table memctx.procedures (
  id uuid not null default gen_random_uuid(),
  user_id uuid not null,
  tool text not null check (length(tool) between 1 and 200),
  -- the error as a signature: its first line, numbers and ids made generic
  error text not null check (length(error) between 1 and 500),
  -- the later call that worked: its arguments as the tool was called
  fix text not null check (length(fix) <= 2000),
  seen_count integer not null default 1 check (seen_count >= 0),
  resolved integer not null default 0 check (resolved >= 0),
  useful integer not null default 0 check (useful >= 0),
  first_seen timestamptz not null,
  last_seen timestamptz not null,
  tsv tsvector generated always as (to_tsvector('english'::regconfig, tool || ' ' || error)) stored,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint procedures_pkey primary key (id, user_id),
  constraint procedures_error_key unique (user_id, tool, error)
);

create table memctx.procedure_sources (
  procedure_id uuid not null,
  user_id uuid not null,
  message_id uuid not null,
  conversation_id uuid not null,
  step text not null check (step in ('error', 'fix')),
  said_at timestamptz not null,
  constraint procedure_sources_pkey primary key (procedure_id, message_id, user_id),
  constraint procedure_sources_procedure_fkey foreign key (procedure_id, user_id)
    references memctx.procedures (id, user_id) on delete cascade,
  constraint procedure_sources_message_fkey foreign key (message_id, user_id)
    references memctx.messages (id, user_id) on delete cascade
);
create index procedure_sources_message_idx on memctx.procedure_sources (message_id, user_id);

create table memctx.feedback (
  id bigint generated always as identity,
  user_id uuid not null,
  target_kind text not null check (target_kind in ('profile_item', 'message', 'summary', 'procedure')),
  target_id uuid not null,
  rating text not null check (rating in ('useful', 'wrong', 'outdated')),
  -- the door it came through, and the credential that gave it (an API key's prefix, 'jwt', 'cli')
  via text not null check (via in ('api', 'mcp', 'page', 'cli', 'library')),
  rated_by text not null check (length(rated_by) between 1 and 200),
  -- the conversation of the rated memory: forgetting it forgets its ratings
  conversation_id uuid,
  note text check (length(note) <= 2000),
  created_at timestamptz not null default now(),
  constraint feedback_pkey primary key (id, user_id),
  constraint feedback_conversation_fkey foreign key (conversation_id, user_id)
    references memctx.conversations (id, user_id) on delete cascade on update cascade
);
create index feedback_target_idx on memctx.feedback (user_id, target_kind, target_id);
create index feedback_created_idx on memctx.feedback (user_id, created_at);

-- Row-level security: a user reads and writes only their own rows --------------------------------
do $$
declare
  tbl text;
begin
  foreach tbl in array array['profile_items', 'profile_sources', 'profile_progress', 'procedures',
                             'procedure_sources', 'feedback'] loop
    execute format('alter table memctx.%I enable row level security', tbl);
    execute format('create policy %I on memctx.%I for all to authenticated
                      using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()))',
                   tbl || '_owner', tbl);
    execute format('grant select, insert, update, delete on memctx.%I to service_role', tbl);
    -- a rating is a record: its author may read and forget it, never rewrite it
    execute format('grant select, insert, delete%s on memctx.%I to authenticated',
                   case when tbl = 'feedback' then '' else ', update' end, tbl);
  end loop;
end
$$;

-- An item whose every source message is gone was learned from nothing left: it goes, and what it
-- had replaced is current again. Items added by hand (origin 'user') never had a source. Runs as
-- its owner: a conversation's deletion under RLS cascades here too.
create function memctx.profile_sources_gone() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  delete from memctx.profile_items i
   where i.id = old.item_id and i.user_id = old.user_id and i.origin = 'learned'
     and not exists (select 1 from memctx.profile_sources s
                      where s.item_id = old.item_id and s.user_id = old.user_id);
  update memctx.profile_items i
     set seen_count = (select count(*) from memctx.profile_sources s
                        where s.item_id = old.item_id and s.user_id = old.user_id)
   where i.id = old.item_id and i.user_id = old.user_id;
  return null;
end
$$;

create trigger profile_sources_gone
  after delete on memctx.profile_sources
  for each row execute function memctx.profile_sources_gone();

create function memctx.profile_item_gone() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  update memctx.profile_items i
     set status = 'active', replaced_by = null, replaced_at = null, updated_at = now()
   where i.replaced_by = old.id and i.user_id = old.user_id and i.status = 'replaced';
  return null;
end
$$;

create trigger profile_item_gone
  after delete on memctx.profile_items
  for each row execute function memctx.profile_item_gone();

-- A procedure whose error and fix messages are all gone goes too.
create function memctx.procedure_sources_gone() returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
  delete from memctx.procedures p
   where p.id = old.procedure_id and p.user_id = old.user_id
     and not exists (select 1 from memctx.procedure_sources s
                      where s.procedure_id = old.procedure_id and s.user_id = old.user_id);
  return null;
end
$$;

create trigger procedure_sources_gone
  after delete on memctx.procedure_sources
  for each row execute function memctx.procedure_sources_gone();

-- Views for dashboards (security_invoker: a user sees their own rows, service_role everyone's) -----

-- Every rating, newest first, with what was rated in a few words.
create view memctx.feedback_log with (security_invoker = true) as
select f.id,
       f.user_id,
       f.created_at,
       f.rating,
       f.target_kind,
       f.target_id,
       f.via,
       f.rated_by,
       f.conversation_id,
       f.note,
       coalesce(p.value, left(m.text, 200), left(s.content, 200), r.tool || ': ' || r.error) as target_text
  from memctx.feedback f
  left join memctx.profile_items p on f.target_kind = 'profile_item' and p.id = f.target_id and p.user_id = f.user_id
  left join memctx.messages m on f.target_kind = 'message' and m.id = f.target_id and m.user_id = f.user_id
  left join memctx.summaries s on f.target_kind = 'summary' and s.id = f.target_id and s.user_id = f.user_id
  left join memctx.procedures r on f.target_kind = 'procedure' and r.id = f.target_id and r.user_id = f.user_id;

-- Per user: the profile's items by status, their sources, procedures, and the bytes they take.
create view memctx.profile_storage with (security_invoker = true) as
select u.user_id,
       coalesce(i.active, 0) as active_items,
       coalesce(i.replaced, 0) as replaced_items,
       coalesce(i.deleted, 0) as deleted_items,
       coalesce(s.sources, 0) as sources,
       coalesce(r.procedures, 0) as procedures,
       coalesce(i.bytes, 0) + coalesce(s.bytes, 0) + coalesce(r.bytes, 0) as bytes
  from (select user_id from memctx.profile_items union select user_id from memctx.procedures) u
  left join (select user_id, count(*) filter (where status = 'active') as active,
                    count(*) filter (where status = 'replaced') as replaced,
                    count(*) filter (where status = 'deleted') as deleted,
                    sum(pg_column_size(x.*)) as bytes
               from memctx.profile_items x group by user_id) i on i.user_id = u.user_id
  left join (select user_id, count(*) as sources, sum(pg_column_size(y.*)) as bytes
               from memctx.profile_sources y group by user_id) s on s.user_id = u.user_id
  left join (select user_id, count(*) as procedures, sum(pg_column_size(z.*)) as bytes
               from memctx.procedures z group by user_id) r on r.user_id = u.user_id;

grant select on memctx.feedback_log, memctx.profile_storage to authenticated, service_role;
