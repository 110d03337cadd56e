-- memctx 0013: a message's seq without rewriting its conversation's row once per message.
--
-- The insert trigger of 0001 took each message's seq by updating its conversation's row
-- (last_seq + 1, message_count + 1). Within one transaction every such update adds a version of
-- that row which the next update must walk to, so a batch into one conversation cost time
-- quadratic in its size: 4,000 messages in one transaction took 3.5 s, against 0.22 s with
-- triggers off (docs/BENCHMARKS.md, "Scale on realistic data"), and a whole ingest file is one
-- transaction.
--
-- Now the row trigger only locks the conversation's row (the same lock the update took, so
-- concurrent inserts into one conversation still queue, and seq order is still insert order)
-- and numbers the message after the conversation's last_seq and the highest seq stored, which
-- includes the rows this statement inserted before it (a volatile trigger function sees them).
-- One statement-level trigger then moves last_seq, message_count and last_message_at once per
-- conversation and statement.

create or replace function memctx.messages_assign_seq() returns trigger
language plpgsql
set search_path = ''
as $$
declare
  conv record;
  stored bigint;
begin
  select c.last_seq, c.user_id into conv
    from memctx.conversations c
   where c.id = new.conversation_id
     for update;
  if not found then
    raise foreign_key_violation using message = format('conversation %s does not exist', new.conversation_id);
  end if;
  if new.user_id is null then
    new.user_id := conv.user_id;
  elsif new.user_id <> conv.user_id then
    raise insufficient_privilege using message = 'message user_id differs from its conversation''s user_id';
  end if;
  select m.seq into stored
    from memctx.messages m
   where m.conversation_id = new.conversation_id
   order by m.seq desc
   limit 1;
  new.seq := greatest(conv.last_seq, coalesce(stored, 0)) + 1;
  return new;
end
$$;

create function memctx.messages_count() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  update memctx.conversations c
     set last_seq = greatest(c.last_seq, n.last_seq),
         message_count = c.message_count + n.added,
         last_message_at = greatest(coalesce(c.last_message_at, n.last_at), n.last_at)
    from (select r.conversation_id, r.user_id, max(r.seq) as last_seq, count(*) as added,
                 max(r.created_at) as last_at
            from new_rows r
           group by r.conversation_id, r.user_id) n
   where c.id = n.conversation_id
     and c.user_id = n.user_id;
  return null;
end
$$;

create trigger messages_count
  after insert on memctx.messages
  referencing new table as new_rows
  for each statement execute function memctx.messages_count();
