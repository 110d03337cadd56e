-- memctx 0019: a block's text fields hold text, refused otherwise by SQL writers as by the library.
--
-- A text block's `text`, an image's `url` and `caption`, a tool call's `id` and `name`, a tool
-- result's `tool_call_id` and thinking's `text` are strings (or absent, or null). A number or an
-- object there was stored and its JSON text used as the message's text; memctx.models now refuses
-- it (`STRING_FIELDS`, in the same words), and so does this trigger. A tool call's `arguments` and
-- a tool result's `content` may still be any JSON. Rows already stored are not checked: the
-- trigger runs on an insert or a change of content. Triggers of one event fire in name order, so
-- this one runs before messages_derive_text (0005), which refuses unknown block types.

create function memctx.messages_check_block_fields() returns trigger
language plpgsql
set search_path = ''
as $$
declare
  bad record;
begin
  if jsonb_typeof(new.content) = 'array' then
    select b.n - 1 as i, f.key, case jsonb_typeof(b.block -> f.key) when 'object' then 'an object'
                                  when 'array' then 'a list' when 'number' then 'a number'
                                  else 'a boolean' end as kind into bad
      from jsonb_array_elements(new.content) with ordinality as b(block, n)
      join (values ('text', 'text'), ('image', 'url'), ('image', 'caption'), ('tool_call', 'id'),
                   ('tool_call', 'name'), ('tool_result', 'tool_call_id'), ('thinking', 'text')) as f(type, key)
        on jsonb_typeof(b.block) = 'object' and f.type = b.block ->> 'type'
     where jsonb_typeof(b.block -> f.key) not in ('string', 'null')
     order by b.n, f.key
     limit 1;
    if found then
      raise check_violation using
        message = format('block %s %s must be a string, got %s', bad.i, bad.key, bad.kind),
        table = 'messages', column = 'content';
    end if;
  end if;
  return new;
end
$$;

create trigger messages_check_block_fields
  before insert or update of content on memctx.messages
  for each row execute function memctx.messages_check_block_fields();
