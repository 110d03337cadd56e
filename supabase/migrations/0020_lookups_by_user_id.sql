-- memctx 0020: the seq trigger and the dashboards' overview find rows by user_id as well as by
-- conversation.
--
-- messages_assign_seq (0013) locked the conversation's row by id alone and read the highest
-- stored seq by conversation_id alone. On Postgres that is the same row and the same range; on a
-- Citus cluster distributed by user_id, a lookup without user_id cannot be routed to one shard,
-- and a trigger that runs on a shard (citus.enable_unsafe_triggers) may only touch colocated
-- rows of the same user. Both lookups now name the message's user_id, which is the primary key
-- of conversations (0012) and the last column of messages_seq_key, so each is still one index
-- probe.
--
-- A message inserted without user_id (plain SQL under row-level security, 0005) still takes its
-- conversation's: it is found by id, as before; Citus refuses such inserts anyway, since it
-- routes an insert by its user_id. A message whose user_id is not its conversation's is refused
-- as a missing conversation of that user (foreign_key_violation, as the composite foreign key
-- to conversations (id, user_id) would refuse it), instead of a second lookup by id alone to tell
-- the two cases apart.

create or replace function memctx.messages_assign_seq() returns trigger
language plpgsql
set search_path = ''
as $$
declare
  conv record;
  stored bigint;
begin
  if new.user_id is null then
    select c.last_seq, c.user_id into conv
      from memctx.conversations c
     where c.id = new.conversation_id
       for update;
  else
    select c.last_seq, c.user_id into conv
      from memctx.conversations c
     where c.id = new.conversation_id and c.user_id = new.user_id
       for update;
  end if;
  if not found then
    raise foreign_key_violation using
      message = format('conversation %s does not exist%s', new.conversation_id,
                       coalesce(' for user ' || new.user_id::text, ''));
  end if;
  new.user_id := conv.user_id;
  select m.seq into stored
    from memctx.messages m
   where m.conversation_id = new.conversation_id and m.user_id = conv.user_id
   order by m.seq desc
   limit 1;
  new.seq := greatest(conv.last_seq, coalesce(stored, 0)) + 1;
  return new;
end
$$;

-- conversation_overview (0008) joined each conversation's messages, live summaries and board on
-- conversation_id alone: a join Citus cannot keep on one shard. The same view, each join also on
-- user_id, which the indexes it reads all carry (messages_user_idx leads with it).
create or replace view memctx.conversation_overview with (security_invoker = true) as
select c.id as conversation_id,
       c.user_id,
       c.external_id,
       c.title,
       c.created_at,
       c.last_message_at,
       c.closed_at,
       c.message_count,
       coalesce(m.tokens, 0) as message_tokens,
       coalesce(s.live, 0) as live_summaries,
       coalesce(s.by_level, '{}'::jsonb) as summaries_by_level,
       b.updated_at as board_updated_at,
       now() - b.updated_at as board_age,
       c.last_seq - coalesce(b.last_seq, 0) as messages_since_board
  from memctx.conversations c
  left join lateral (
    select sum(x.token_count) as tokens
      from memctx.messages x where x.conversation_id = c.id and x.user_id = c.user_id
  ) m on true
  left join lateral (
    select sum(l.n) as live, jsonb_object_agg(l.level, l.n) as by_level
      from (select case when y.is_master then 'master' else y.level::text end as level, count(*) as n
              from memctx.summaries y
             where y.conversation_id = c.id and y.user_id = c.user_id and y.superseded_at is null
             group by 1) l
  ) s on true
  left join memctx.summary_boards b on b.conversation_id = c.id and b.user_id = c.user_id;
