-- memctx 0016: each conversation counts its messages' lexemes, so BM25's mean length is read,
-- not computed per search.
--
-- BM25 weighs a turn's matches by its length against the mean length of the scope's turns. The
-- search took that mean from every turn's tsvector, and a message's row passes the 2 kB TOAST
-- threshold, so its tsvector is stored out of line: on a LoCoMo conversation (~600 turns) the
-- full-text list spent most of its time fetching every turn's tsvector, for one average, before
-- reading the few that match. With the sum kept beside message_count, the full-text list reads
-- only the matching turns through 0014's index (`search_lexical_bounded` in memctx/sql/retrieve.sql):
-- the search statement's execution went 7.1 -> 3.4 ms on the LoCoMo dev split (docs/RETRIEVAL.md).
--
-- Like message_count, the count follows inserts (the statement-level trigger of 0013); the
-- backfill below reads every stored tsvector once.

alter table memctx.conversations add column lexeme_count bigint not null default 0;
-- as 0005 grants every column but the key: the insert trigger runs as the inserting role
grant insert (lexeme_count), update (lexeme_count) on memctx.conversations to authenticated;

update memctx.conversations c
   set lexeme_count = s.lexemes
  from (select m.conversation_id, sum(length(m.tsv)) as lexemes
          from memctx.messages m
         group by m.conversation_id) s
 where c.id = s.conversation_id;

create or replace function memctx.messages_count() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  update memctx.conversations c
     set last_seq = greatest(c.last_seq, n.last_seq),
         message_count = c.message_count + n.added,
         lexeme_count = c.lexeme_count + n.lexemes,
         last_message_at = greatest(coalesce(c.last_message_at, n.last_at), n.last_at)
    from (select r.conversation_id, r.user_id, max(r.seq) as last_seq, count(*) as added,
                 coalesce(sum(length(r.tsv)), 0) as lexemes, max(r.created_at) as last_at
            from new_rows r
           group by r.conversation_id, r.user_id) n
   where c.id = n.conversation_id
     and c.user_id = n.user_id;
  return null;
end
$$;
