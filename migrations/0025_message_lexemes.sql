-- memctx 0025: each message keeps its length in lexemes in its row, so BM25 reads a match's
-- length without fetching the match's tsvector.
--
-- BM25 damps a turn's score by its length in lexemes, `length(tsv)`. A message's row passes the
-- 2 kB TOAST threshold (its 384-dimension vector alone is 1.5 kB), so its tsvector is stored out
-- of line, and the full-text list (`search_lexical_bounded` in memctx/sql/retrieve.sql) fetched
-- it from the TOAST table for every match, only to count it: a user with 100,000 messages has
-- ~5,800 matches per question. The count is now the column `lexemes`, read by the full-text list
-- as `coalesce(lexemes, length(tsv))`. On bench/scale.py's 200,000-message realistic table the
-- heavy user's matches took 11 / 50 ms p50 / p95 with the count against 38 / 120 ms with
-- length(tsv), and its user-wide get_working_context 0.72–0.83× p50, 0.56–0.68× p95.
--
-- The count is written by a BEFORE trigger on every insert and on every update that changes the
-- text or the date the tsvector is made of (memctx.message_tsv, 0017; a BEFORE trigger cannot
-- read the generated tsv, which is computed after it). Like tsv, it is part of the row: the
-- trigger fires ALWAYS, so a bulk import with triggers off (session_replication_role = replica)
-- counts too, and an update cannot set a count that disagrees with the text (the trigger keeps
-- the old one); `authenticated` gets no column privilege on it (0005).
--
-- Messages stored before keep a null count: the migration fills nothing, and coalesce reads their
-- tsvector as before, with the same result. Filling them is an UPDATE of every row, and a row
-- that no longer fits its page is a new row version in every index, HNSW included: 436 s for
-- 200,000 messages, then a 39 s VACUUM; adding the count as a stored generated column instead
-- rewrites the table and rebuilds every index: 226 s for 200,000 messages, reads and writes
-- blocked throughout. So the worker fills them while it is idle, a small batch at a time
-- (memctx.store.fill_lexeme_counts, found through the partial index below, which empties as
-- they are counted); nobody has to run anything.
--
-- BM25's mean length (0016's conversations.lexeme_count) is summed from the same counts.

alter table memctx.messages add column lexemes integer;

-- The rows still to count (only rows stored before this migration: the trigger counts every new one).
create index messages_lexemes_missing_idx on memctx.messages (user_id, conversation_id) where lexemes is null;

create function memctx.messages_lexemes() returns trigger
language plpgsql
set search_path = ''
as $$
begin
  if tg_op = 'UPDATE' and old.lexemes is not null
     and new.text is not distinct from old.text and new.created_at is not distinct from old.created_at then
    new.lexemes := old.lexemes;
  else
    new.lexemes := pg_catalog.length(memctx.message_tsv(new.text, new.created_at));
  end if;
  return new;
end
$$;

-- Named to fire after messages_derive_text (0005), which may set the text: BEFORE triggers of
-- one event fire in name order.
create trigger messages_lexemes
  before insert or update on memctx.messages
  for each row execute function memctx.messages_lexemes();
alter table memctx.messages enable always trigger messages_lexemes;

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
                 coalesce(sum(r.lexemes), 0) as lexemes, max(r.created_at) as last_at
            from new_rows r
           group by r.conversation_id, r.user_id) n
   where c.id = n.conversation_id
     and c.user_id = n.user_id;
  return null;
end
$$;
