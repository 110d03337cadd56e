-- memctx 0017: the day a message was said, in its full-text index.
--
-- A question that names a date ("What did Maria donate to the shelter in December 2023?", "on 3
-- June, 2023") most often means the day the turn was said, which its text never says: on the
-- LoCoMo dev split 89 of the 92 gold turns of such questions were said in the month the question
-- names, none of them names it. Each message's tsvector now carries that day as three lexemes,
-- the month ('m202306'), the month of any year ('m06') and the day ('d20230603'), in UTC as the
-- context's date headers are; query analysis (memctx/retrieve/lexical.py) turns the dates a
-- question names into the same terms, so BM25 weighs the turns said then like a rare word. A
-- message without searchable text gets none (it is never a candidate).
--
-- tsv is a stored generated column and PostgreSQL before 17 cannot change its expression, so it
-- is dropped and added again: the table is rewritten (every row's tsvector recomputed, which is
-- the backfill) and its full-text index, dropped with the column, is built again as 0014 left it.
-- On a large table this takes minutes (a rewrite and a GIN build); searches wait for it. Every
-- text message has three lexemes more, so each conversation's lexeme_count (0016: BM25's mean
-- length) is counted again from the new tsvectors.

create function memctx.message_tsv(body text, said timestamptz) returns tsvector
  language sql immutable parallel safe
  -- to_char is stable only for its locale-dependent patterns (month names); these are numeric
  return to_tsvector('english'::regconfig, body)
         || case when body <> ''
                 then to_tsvector('simple'::regconfig, to_char(said at time zone 'UTC', '"m"YYYYMM "m"MM "d"YYYYMMDD'))
                 else ''::tsvector end;

alter table memctx.messages drop column tsv;
alter table memctx.messages
  add column tsv tsvector generated always as (memctx.message_tsv(text, created_at)) stored;

do $$
begin
  if exists (select from pg_extension where extname = 'btree_gin') then
    create index messages_scope_tsv_idx on memctx.messages using gin (user_id, conversation_id, tsv);
  else
    create index messages_tsv_idx on memctx.messages using gin (tsv);
  end if;
end
$$;

update memctx.conversations c
   set lexeme_count = s.lexemes
  from (select m.conversation_id, sum(length(m.tsv)) as lexemes
          from memctx.messages m
         group by m.conversation_id) s
 where c.id = s.conversation_id;
