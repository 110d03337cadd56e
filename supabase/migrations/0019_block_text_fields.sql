-- memctx 0019: a block's text fields hold text, refused otherwise by SQL writers as by the library.
--
-- A text block's `text`, an image's `url` and `caption`, a tool call's `id` and `name`, a tool
-- result's `tool_call_id` and thinking's `text` are strings (or absent, or null). A number or an
-- object there was stored and its JSON text used as the message's text; memctx.models now refuses
-- it (`STRING_FIELDS`, the same words), and so does the trigger that already refuses unknown block
-- types. A tool call's `arguments` and a tool result's `content` may still be any JSON. Rows
-- already stored are not checked: the trigger runs on an insert or a change of content.
-- The function keeps its name and signature (its trigger is unchanged); only the body grows.

create or replace function memctx.messages_derive_text() returns trigger
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
    select b.n - 1 as i, f.key, case jsonb_typeof(b.block -> f.key) when 'object' then 'an object'
                                  when 'array' then 'a list' when 'number' then 'a number'
                                  else 'a boolean' end as kind into bad
      from jsonb_array_elements(new.content) with ordinality as b(block, n)
      join (values ('text', 'text'), ('image', 'url'), ('image', 'caption'), ('tool_call', 'id'),
                   ('tool_call', 'name'), ('tool_result', 'tool_call_id'), ('thinking', 'text')) as f(type, key)
        on f.type = b.block ->> 'type'
     where jsonb_typeof(b.block -> f.key) not in ('string', 'null')
     order by b.n, f.key
     limit 1;
    if found then
      raise check_violation using
        message = format('block %s %s must be a string, got %s', bad.i, bad.key, bad.kind),
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
