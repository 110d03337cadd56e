-- memctx 0027: each conversation keeps the names of its speakers, so a search reads them from its
-- conversations' rows instead of from every message of its scope.
--
-- A search's query analysis needs the scope's speaker names (memctx.retrieve.lexical: a name in
-- the query is a speaker signal, not a search term). `conversation_speakers` read them as the
-- distinct `metadata ->> 'speaker'` of every message of the scope: for a user-wide search, every
-- message the user has. Each process caches them per scope, but a scope's first search in a
-- process paid the scan: 124-136 ms for a user of 100,000 messages on bench/scale.py's 1M table,
-- 16-21 ms for 16,000. Read from the user's conversations it is a few hundred short arrays.
--
-- Like message_count, the names follow inserts (the statement-level trigger of 0013, here with
-- 0025's body and the names added). A name stays when its messages are deleted (a name that no
-- longer occurs only keeps that word out of the query's terms), and a metadata update that
-- renames a speaker is not followed; memctx never makes one. The backfill reads every message once.

alter table memctx.conversations add column speakers text[] not null default '{}';
-- as 0005 grants every column but the key: the insert trigger runs as the inserting role
grant insert (speakers), update (speakers) on memctx.conversations to authenticated;

update memctx.conversations c
   set speakers = s.names
  from (select m.conversation_id, m.user_id,
               array_agg(distinct m.metadata ->> 'speaker' order by m.metadata ->> 'speaker') as names
          from memctx.messages m
         where m.metadata ->> 'speaker' <> ''
         group by m.conversation_id, m.user_id) s
 where c.id = s.conversation_id
   and c.user_id = s.user_id;

create or replace function memctx.messages_count() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  update memctx.conversations c
     set last_seq = greatest(c.last_seq, n.last_seq),
         message_count = c.message_count + n.added,
         lexeme_count = c.lexeme_count + n.lexemes,
         last_message_at = greatest(coalesce(c.last_message_at, n.last_at), n.last_at),
         speakers = case when n.speakers <@ c.speakers then c.speakers
                         else array(select distinct s from pg_catalog.unnest(c.speakers || n.speakers) as s order by s) end
    from (select r.conversation_id, r.user_id, max(r.seq) as last_seq, count(*) as added,
                 coalesce(sum(r.lexemes), 0) as lexemes, max(r.created_at) as last_at,
                 coalesce(array_agg(distinct r.metadata ->> 'speaker') filter (where r.metadata ->> 'speaker' <> ''),
                          '{}') as speakers
            from new_rows r
           group by r.conversation_id, r.user_id) n
   where c.id = n.conversation_id
     and c.user_id = n.user_id;
  return null;
end
$$;
