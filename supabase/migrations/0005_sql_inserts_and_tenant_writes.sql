-- memctx 0005: rows written by plain SQL behave like `memctx ingest`, and no tenant can write
-- into (or probe for) another tenant's conversation.
--
--  * messages.text is derived in the database from the typed content blocks, with the rules of
--    memctx.models.text_from_blocks (a test runs both over many block combinations), whenever
--    the writer leaves it empty; unknown block types are refused as ingest refuses them. A
--    message without searchable text has no embedding and 0 tokens, so it is never a dense hit.
--    Existing rows with empty text get their text now, and their conversation a 'summarize'
--    request so the worker embeds them.
--  * every row that names a conversation names it together with its owner: composite foreign
--    keys (conversation_id, user_id) -> conversations (id, user_id), and RLS `with check`
--    policies that require the conversation to be the caller's own. The policy is checked
--    before unique indexes and foreign keys, so for `authenticated` another tenant's
--    conversation id fails exactly like an unknown one (row-level security violation).
--  * `authenticated` cannot choose or change primary keys (column privileges): a client-chosen
--    id that collided with another tenant's row would tell it that row exists. Ids come from
--    the database; a client's own identifiers go in external_id. A later migration that adds a
--    column to one of these tables grants it to `authenticated` explicitly.

-- Text from typed blocks ---------------------------------------------------------------------

-- Python's str.strip(): every character for which str.isspace() is true.
create function memctx.trim_space(value text) returns text
language sql immutable parallel safe
set search_path = ''
as $$
  select pg_catalog.btrim(value,
    chr(9) || chr(10) || chr(11) || chr(12) || chr(13) || chr(28) || chr(29) || chr(30) || chr(31) ||
    chr(32) || chr(133) || chr(160) || chr(5760) || chr(8192) || chr(8193) || chr(8194) || chr(8195) ||
    chr(8196) || chr(8197) || chr(8198) || chr(8199) || chr(8200) || chr(8201) || chr(8202) ||
    chr(8232) || chr(8233) || chr(8239) || chr(8287) || chr(12288))
$$;

-- A block field as text: a string as it is, JSON null or absent as `missing`, anything else as
-- Postgres prints the jsonb value (models.py renders Python values the same way).
create function memctx.block_field_text(value jsonb, missing text) returns text
language sql immutable parallel safe
set search_path = ''
as $$
  select case when value is null or jsonb_typeof(value) = 'null' then missing
              when jsonb_typeof(value) = 'string' then value #>> '{}'
              else value::text end
$$;

-- The plain text a message contributes to search and summaries: text blocks as they are, an
-- image its caption, a tool call its name and arguments, a tool result its content; thinking
-- is left out. Non-empty parts joined by newlines, outer whitespace stripped.
create function memctx.message_text(content jsonb) returns text
language sql immutable parallel safe
set search_path = ''
as $$
  select memctx.trim_space(coalesce(string_agg(p.part, E'\n' order by b.n) filter (where p.part <> ''), ''))
    from jsonb_array_elements(case when jsonb_typeof(content) = 'array' then content else '[]'::jsonb end)
         with ordinality as b(block, n)
   cross join lateral (
     select case b.block ->> 'type'
              when 'text' then memctx.block_field_text(b.block -> 'text', '')
              when 'image' then nullif('[image: ' || memctx.block_field_text(b.block -> 'caption', '') || ']',
                                       '[image: ]')
              when 'tool_call' then '[tool call ' || memctx.block_field_text(b.block -> 'name', '?') || '('
                                    || memctx.block_field_text(b.block -> 'arguments', '{}') || ')]'
              when 'tool_result' then memctx.block_field_text(b.block -> 'content', '')
            end as part
   ) p
$$;

-- Before a message is stored: refuse unknown block types; derive text when the writer left it
-- empty (a writer's non-empty text is kept as given); on an update whose text was derived from
-- the old content, follow the new content; a changed text drops the embedding and token count
-- it no longer matches (the worker redoes them); an empty text has no embedding and 0 tokens.
create function memctx.messages_derive_text() returns trigger
language plpgsql
set search_path = ''
as $$
declare
  bad record;
begin
  if (tg_op = 'INSERT' or new.content is distinct from old.content) and jsonb_typeof(new.content) = 'array' then
    select b.n - 1 as i, coalesce((b.block -> 'type')::text, jsonb_typeof(b.block)) as kind into bad
      from jsonb_array_elements(new.content) with ordinality as b(block, n)
     where jsonb_typeof(b.block) <> 'object'
        or coalesce(b.block ->> 'type', '') not in ('text', 'image', 'tool_call', 'tool_result', 'thinking')
     order by b.n
     limit 1;
    if found then
      raise check_violation using
        message = format('block %s has unknown type %s (known: text, image, tool_call, tool_result, thinking)',
                         bad.i, bad.kind),
        table = 'messages', column = 'content';
    end if;
  end if;
  if new.text is null or memctx.trim_space(new.text) = '' then
    new.text := memctx.message_text(new.content);
  elsif tg_op = 'UPDATE' and new.content is distinct from old.content and new.text = old.text
        and old.text = memctx.message_text(old.content) then
    new.text := memctx.message_text(new.content);
  end if;
  if new.text = '' then
    new.embedding := null;
    new.token_count := 0;
  elsif tg_op = 'UPDATE' and new.text <> old.text then
    -- (compared as text: pgvector's operators live in a schema this function does not search)
    if new.embedding::text is not distinct from old.embedding::text then
      new.embedding := null;
    end if;
    if new.token_count is not distinct from old.token_count then
      new.token_count := null;
    end if;
  end if;
  return new;
end
$$;

-- Not `update of embedding`: configure_embedding_space alters that column's type, which a
-- trigger's column list would forbid.
create trigger messages_derive_text
  before insert or update of content, text on memctx.messages
  for each row execute function memctx.messages_derive_text();

-- Existing rows with empty text: derive it now (the trigger also drops the embedding of the
-- empty text), and ask the worker to embed them and fold them into summaries.
with derived as (
  update memctx.messages set text = ''
   where memctx.trim_space(text) = ''
     and (text <> '' or embedding is not null or token_count is distinct from 0
          or memctx.message_text(content) <> '')
  returning conversation_id, user_id, text
)
insert into memctx.outbox (user_id, conversation_id, kind)
select distinct d.user_id, d.conversation_id, 'summarize' from derived d where d.text <> '';

-- One tenant per conversation ------------------------------------------------------------------

-- Rows whose user_id differs from their conversation's owner could only be written through the
-- hole this migration closes (every memctx code path takes user_id from the conversation); they
-- are another tenant's writes into a conversation that is not theirs, and are removed.
do $$
declare
  tbl text;
  n bigint;
begin
  foreach tbl in array array['messages', 'summaries', 'summary_boards', 'working_memory_chunks',
                             'conversation_summaries', 'outbox'] loop
    execute format('delete from memctx.%I x using memctx.conversations c
                     where c.id = x.conversation_id and c.user_id <> x.user_id', tbl);
    get diagnostics n = row_count;
    if n > 0 then
      raise notice 'memctx 0005: removed % % row(s) written into another user''s conversation', n, tbl;
    end if;
  end loop;
  update memctx.summaries s set superseded_by = null
    from memctx.summaries t
   where t.id = s.superseded_by and t.conversation_id <> s.conversation_id;
end
$$;

alter table memctx.conversations add constraint conversations_id_user_key unique (id, user_id);
alter table memctx.summaries add constraint summaries_id_conversation_key unique (id, conversation_id);

do $$
declare
  tbl text;
begin
  foreach tbl in array array['messages', 'summaries', 'summary_boards', 'working_memory_chunks',
                             'conversation_summaries', 'outbox'] loop
    execute format('alter table memctx.%I drop constraint %I', tbl, tbl || '_conversation_id_fkey');
    execute format('alter table memctx.%I add constraint %I foreign key (conversation_id, user_id)
                      references memctx.conversations (id, user_id) on delete cascade on update cascade',
                   tbl, tbl || '_conversation_fkey');
  end loop;
end
$$;

-- A summary is superseded only by a summary of its own conversation.
alter table memctx.summaries drop constraint summaries_superseded_by_fkey;
alter table memctx.summaries add constraint summaries_superseded_by_fkey foreign key (superseded_by, conversation_id)
  references memctx.summaries (id, conversation_id) on delete set null (superseded_by);

-- Row-level security: a row's conversation is the caller's own -----------------------------------
do $$
declare
  tbl text;
begin
  foreach tbl in array array['messages', 'summaries', 'summary_boards', 'working_memory_chunks',
                             'conversation_summaries', 'outbox'] loop
    execute format('drop policy %I on memctx.%I', tbl || '_owner', tbl);
    execute format($p$
      create policy %1$I on memctx.%2$I for all to authenticated
        using (user_id = (select auth.uid()))
        with check (user_id = (select auth.uid())
                    and exists (select 1 from memctx.conversations c
                                 where c.id = %2$I.conversation_id and c.user_id = (select auth.uid())))
    $p$, tbl || '_owner', tbl);
  end loop;
end
$$;

-- Primary keys come from the database ------------------------------------------------------------
do $$
declare
  tbl text;
  cols text;
begin
  foreach tbl in array array['conversations', 'messages', 'summaries', 'working_memory_chunks', 'outbox'] loop
    select string_agg(quote_ident(a.attname), ', ' order by a.attnum) into cols
      from pg_attribute a
     where a.attrelid = format('memctx.%I', tbl)::regclass and a.attnum > 0 and not a.attisdropped
       and a.attgenerated = '' and a.attname <> 'id';
    execute format('revoke insert, update on memctx.%I from authenticated', tbl);
    execute format('grant insert (%s), update (%s) on memctx.%I to authenticated', cols, cols, tbl);
  end loop;
end
$$;
