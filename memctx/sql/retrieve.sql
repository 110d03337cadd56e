-- Memory search and context assembly: candidate generation in one round trip per retrieval.
--
-- Plans for the relevance lists, chosen per query by memctx/retrieve/search.py from the
-- known size of the scope (conversations.message_count):
-- * exact, up to MemorySearch's exact_limit turns (every LoCoMo conversation): dense candidates
--   are exact scans over a btree-selected subset (one conversation, one user), BM25 over the
--   matching turns through migration 0014's index where it exists and no time range is given
--   (the same ranking, `search_lexical_bounded`), else over every turn. Ordering by an
--   expression (the smoothed score) that the HNSW index cannot serve, the planner never trades
--   the exact top-k for an index scan that returns at most ef_search rows before the filter (a
--   plan prepared before ANALYZE would otherwise keep that scan).
-- * past it: dense candidates from an iterative HNSW scan under the scope's filter, rescored
--   exactly with their neighbours, with the exact scan as a fallback when the index comes back
--   short (`search_dense_index`); BM25 over the GIN-selected matches only
--   (`search_lexical_bounded`). The dense list stays exact when the scope is so small a share of
--   the table that the filtered index scan would visit too many other users' rows.
-- * all of a user's memory past it, where it costs least: the same, but the dense pool comes from
--   the nearest codes of the embeddings' sign bits (migration 0023's message_codes), rescored
--   exactly (`search_dense_quantized`): no other user's row is read, so its cost follows the
--   user's size, not the table's.
-- `search_global_dense` uses HNSW without a filter.
--
-- The two search queries are templates: memctx/retrieve/queries.py fills their placeholders in
-- braces once, at import, for each plan, with the shared blocks below (`search_scope` or
-- `search_scope_conversation`, the `search_dense_*` and `search_lexical_*` blocks,
-- `search_hits`, `search_message_rows`) and with the per-signal columns it generates from the
-- list of retrieval signals (memctx/retrieve/signals.py). A signal is a CTE of both queries
-- named after the signal's `cte`, with columns (id, conversation_id, seq, rank): rank 1-based,
-- best first, within its top k.
-- Braces are reserved for placeholders in these blocks, comments included.
--
-- Parameters shared by the search blocks:
--   user_id, conversation_id   the scope: a user's memory, or one conversation of it (null = all)
--   query_vec  vector   the embedded query
--   tsquery    text     an OR query of sanitized terms for to_tsquery('english', …); '' = none
--   since/until         optional created_at range [since, until)
--   k_dense, k_lexical, k_recent
--   window, pair        the turns read with each hit: ±window either side and, with pair, its partner
--   past the exact scan: k_pool (turns taken from the HNSW index or the codes), k_match (matches
--   read per term), k_codes (codes rescored), scope_size (messages in the scope)
--
-- A message without searchable text (text = '': thinking only, an image without caption) is
-- never a candidate: it has no embedding (migration 0005) and no lexemes, and recency alone
-- never makes a hit. It can still appear as a neighbour of a hit.

-- name: search_scope
-- (Shared block.) The messages a search of all of a user's memory may find (`search_user`): the
-- user's, created in [since, until). Not materialized: every list reads it through its own
-- index. Written for a generic plan as well as a custom one (search.py prepares the bounded
-- plan's): no test depends on a value to pick the index. A search without a time range runs
-- every statement without its time-range tests (`memctx.retrieve.queries.time_range_filter`).
scope as not materialized (
  select m.*
    from memctx.messages m
   where m.user_id = %(user_id)s::uuid {in_range_m}
)

-- name: search_scope_conversation
-- (Shared block.) search_scope of one conversation (`search_conversation`), tested without a
-- null test, so that the generic plan of the bounded query still reads the conversation through
-- its index: with `%(conversation_id)s is null or …` it could only filter the user's rows.
scope as not materialized (
  select m.*
    from memctx.messages m
   where m.user_id = %(user_id)s::uuid
     and m.conversation_id = %(conversation_id)s::uuid {in_range_m}
)

-- name: search_passages_exact
-- (Shared block.) The best passage of each long message of the scope (migration 0022): every
-- passage of the user (of the conversation searched, if one is) said in the time range, scored
-- exactly; per message the passage most similar to the query. The dense list ranks a message by
-- the better of its own similarity and its best passage's, and the rows carry the passage so
-- that a context can show it as an excerpt. Empty, and read through its index, for a user
-- without long messages (no LoCoMo turn has passages).
passages as materialized (
  select distinct on (p.message_id) p.message_id as id, p.id as passage_id, p.chunk_text as passage_text,
         p.token_count as passage_tokens, 1 - (p.embedding <=> %(query_vec)s::vector) as sim
    from memctx.working_memory_chunks p
   where p.user_id = %(user_id)s::uuid {passage_conversation}
     and p.message_id is not null and p.embedding is not null {in_range_p}
   order by p.message_id, p.embedding <=> %(query_vec)s::vector, p.part
)

-- name: search_passages_index
-- (Shared block.) search_passages_exact past the exact scan: the k_pool passages nearest the
-- query through the HNSW index under the scope's filter (the plan's HNSW settings apply), best
-- per message. Only messages the dense pool holds are ranked by them; a message is found
-- through a passage alone only within the exact scan.
passages as materialized (
  select distinct on (x.message_id) x.message_id as id, x.id as passage_id, x.chunk_text as passage_text,
         x.token_count as passage_tokens, 1 - x.distance as sim
    from (select p.id, p.message_id, p.chunk_text, p.token_count, p.part,
                 p.embedding <=> %(query_vec)s::vector as distance
            from memctx.working_memory_chunks p
           where p.user_id = %(user_id)s::uuid {passage_conversation}
             and p.message_id is not null and p.embedding is not null {in_range_p}
           order by p.embedding <=> %(query_vec)s::vector
           limit %(k_pool)s) x
   order by x.message_id, x.distance, x.part
)

-- name: search_hits
-- (Shared block.) Every candidate message once, with its position and its rank in each signal's
-- list (null = not in it); then the rows of the hits, of their ±window neighbours and, with
-- `pair`, of their partners (the turn a pair takes: the reply after a user turn, the user turn
-- before a reply), read once each where they are found (never limited to the scope's time
-- range: a hit keeps its pair).
hits as (
  select c.id, c.conversation_id, c.seq, {ranks}
    from ({candidates}) c
   group by c.id, c.conversation_id, c.seq
), wanted as (
  -- one range lookup per hit (`offset 0` keeps the planner from joining a guessed number of
  -- hits to a scan of the table); without neighbours only the partner's side comes back (the
  -- other side, which no memory takes, would be over a quarter of a search's rows)
  select distinct on (m.id) m.*
    from hits h
   cross join lateral (
     select x.*
       from (select m.id, m.conversation_id, m.seq, m.role, m.text, m.external_id, m.token_count, m.created_at,
                    m.metadata ->> 'speaker' as speaker, (m.metadata ->> 'session')::int as session,
                    1 - (m.embedding <=> %(query_vec)s::vector) as similarity,
                    max(case when m.seq = h.seq then case m.role when 'user' then 1 when 'assistant' then -1 end end)
                      over () as partner_side
               from memctx.messages m
              where m.conversation_id = h.conversation_id and m.user_id = %(user_id)s::uuid
                and m.seq between h.seq - greatest(%(window)s, %(pair)s::int)
                              and h.seq + greatest(%(window)s, %(pair)s::int)
             offset 0) x
      where abs(x.seq - h.seq) <= %(window)s or (%(pair)s and x.seq = h.seq + x.partner_side)) m
   order by m.id
)

-- name: search_message_rows
-- (Shared block.) The rows of the hits and their neighbours, each with its ranks and best passage.
-- A message's similarity is the better of its own and its best passage's (the threshold reads it).
select 'message'::text as kind, w.id, w.conversation_id, w.seq, w.seq as first_seq, w.seq as last_seq,
       w.role, w.text, w.external_id, w.token_count, w.created_at, w.speaker, w.session,
       greatest(w.similarity, ps.sim) as similarity, {hit_ranks}, hits.id is not null as is_hit,
       ps.passage_id, ps.passage_text, ps.passage_tokens
  from wanted w
  left join hits on hits.id = w.id
  left join passages ps on ps.id = w.id

-- name: search_dense_exact
-- (Shared block.) The dense list's turns, exact: every message of the scope with its cosine
-- similarity (null without searchable text), all eligible (near = 0).
dense_turns as (
  select m.id, m.conversation_id, m.seq, 0 as near,
         case when m.embedding is not null and m.text <> '' then 1 - (m.embedding <=> %(query_vec)s::vector) end as sim
    from scope m
)

-- name: search_dense_index
-- (Shared block.) The dense pool past the exact scan, for a scope too large to scan per query:
-- the k_pool nearest turns through the HNSW index under the scope's filter (search.py sets
-- hnsw.iterative_scan = relaxed_order and ef_search for the transaction); their neighbours come
-- from `search_dense_pool_turns`. Never short: when the index yields fewer than k_pool turns
-- (iterative scan off, max_scan_tuples reached, a plan prepared before ANALYZE that stops at
-- ef_search), the pool comes from the exact scan instead (a one-time filter: only one branch runs).
dense_index as materialized (
  select m.id, m.conversation_id, m.seq
    from scope m
   where m.embedding is not null and m.text <> ''
   order by m.embedding <=> %(query_vec)s::vector
   limit %(k_pool)s
), dense_pool as (
  select p.id, p.conversation_id, p.seq
    from dense_index p
   where (select count(*) from dense_index) >= %(k_pool)s
  union all
  select e.id, e.conversation_id, e.seq
    from (select m.id, m.conversation_id, m.seq
            from scope m
           where m.embedding is not null and m.text <> ''
           order by (m.embedding <=> %(query_vec)s::vector) + 0
           limit %(k_pool)s) e
   where (select count(*) from dense_index) < %(k_pool)s
)

-- name: search_dense_pool_turns
-- (Shared block, after `search_dense_index` or `search_dense_quantized`.) The dense list's turns
-- from dense_pool: each pool turn with its ±2 neighbours, so that the smoothed score of every
-- turn within ±1 of the pool is exact; `near` is that distance.
dense_turns as (
  -- `offset 0` keeps each lateral a lookup per row (one index range per pool turn): pulled up,
  -- the planner, which cannot estimate the pool, joined it to a scan of the whole scope. The
  -- range reads each turn's row, so its similarity is taken there (a turn near two pool turns
  -- is scored twice, alike). Grouped by conversation and seq first: the ranking's window reads
  -- the turns in that order, and one sort then serves both.
  select m.id, m.conversation_id, m.seq, min(abs(m.seq - p.seq)) as near, m.sim
    from dense_pool p
   cross join lateral (
     select m.id, m.conversation_id, m.seq,
            case when m.embedding is not null and m.text <> '' then 1 - (m.embedding <=> %(query_vec)s::vector) end as sim
       from scope m
      where m.conversation_id = p.conversation_id and m.seq between p.seq - 2 and p.seq + 2
     offset 0) m
   group by m.conversation_id, m.seq, m.id, m.sim
)

-- name: search_dense_quantized
-- (Shared block.) The dense pool past the exact scan from the embeddings' sign bits (migration
-- 0023): one index-only scan of message_codes_user_idx ranks every code of the scope by Hamming
-- distance, the k_codes nearest are rescored with their vectors (one scan of the primary key
-- for all of them) and the k_pool best kept; their neighbours come from
-- `search_dense_pool_turns`. Its cost follows the scope's size, whatever the table's: no other
-- user's row is read. The query's code is made once, in a subquery: as a parameter's function,
-- a generic plan made it again for every code. A user-wide search tests no conversation
-- (`conversation_filter`), where `%(conversation_id)s is null or …` cost its generic plan a filter
-- per code.
dense_codes as materialized (
  select c.message_id
    from memctx.message_codes c
   where c.user_id = %(user_id)s::uuid {codes_conversation} {in_range_c}
   order by c.bits <~> (select binary_quantize(%(query_vec)s::vector))
   limit %(k_codes)s
), dense_pool as (
  -- the codes' ids as one array: one index scan looks them all up, where a lateral lookup per
  -- code started and ended a scan of its own
  select m.id, m.conversation_id, m.seq
    from scope m
   where m.id = any(array(select c.message_id from dense_codes c)) and m.embedding is not null and m.text <> ''
   order by m.embedding <=> %(query_vec)s::vector
   limit %(k_pool)s
)

-- name: search_dense_rank
-- (Shared block.) The dense list from dense_turns: each turn's similarity, or its best passage's
-- when higher (`passages`), smoothed over the neighbouring
-- turns of the same conversation (a turn inside a relevant stretch of conversation ranks above
-- an isolated look-alike; smooth = 0 turns this off), top k_dense.
-- Ties are broken by position, then conversation (turns of a user's conversations share seqs),
-- so that a ranking never depends on the plan (the full-text lists do the same).
dense as (
  select x.id, x.conversation_id, x.seq, row_number() over (order by x.score desc, x.seq desc, x.conversation_id) as rank
    from (select t.id, t.conversation_id, t.seq, t.near,
                 t.sim + %(smooth)s::float8 * (coalesce(lag(t.sim) over w, 0) + coalesce(lead(t.sim) over w, 0)) / 2
                   as score
            from (select d.id, d.conversation_id, d.seq, d.near, greatest(d.sim, ps.sim) as sim
                    from dense_turns d left join passages ps on ps.id = d.id) t
          window w as (partition by t.conversation_id order by t.seq)) x
   where x.score is not null and x.near <= 1
   order by x.score desc, x.seq desc, x.conversation_id
   limit %(k_dense)s
)

-- name: search_dense_rank_scope
-- (Shared block.) `search_dense_rank` for a dense list of every turn of the scope (the exact
-- plans): the same scores, ties and list, with each conversation's similarities gathered into one
-- array in seq order and the neighbours read by subscript. The scope's turns come in (conversation,
-- seq) order from messages_user_idx, and over thousands of them the window's lag and lead cost
-- more than the similarities themselves. A similarity is never below -1, so -9 stands for none:
-- an array with nulls is read element by element to find a subscript.
dense as (
  select y.id, y.conversation_id, y.seq, row_number() over (order by y.score desc, y.seq desc, y.conversation_id) as rank
    from (select a.ids[i] as id, a.conversation_id, a.seqs[i] as seq,
                 a.sims[i] + %(smooth)s::float8 * (coalesce(nullif(a.sims[i - 1], -9), 0) + coalesce(nullif(a.sims[i + 1], -9), 0)) / 2
                   as score
            from (select t.conversation_id, array_agg(t.id order by t.seq) as ids, array_agg(t.seq order by t.seq) as seqs,
                         array_agg(coalesce(t.sim, -9) order by t.seq) as sims
                    from (select d.id, d.conversation_id, d.seq, greatest(d.sim, ps.sim) as sim
                            from dense_turns d left join passages ps on ps.id = d.id) t
                   group by t.conversation_id) a
           cross join lateral generate_subscripts(a.sims, 1) as i
           where a.sims[i] > -9
           order by score desc, seq desc, a.conversation_id
           limit %(k_dense)s) y
)

-- name: search_lexical_terms
-- (Shared block.) The query's terms, one tsquery each, numbered (`term`: a key that hashes,
-- where grouping thousands of matches by tsquery sorts them). BM25 with binary term frequency:
-- rare words weigh more than common ones (ts_rank_cd weighs every query word alike), longer
-- turns are damped.
terms as (
  select d.q, row_number() over () as term
    from (select distinct x.q
            from unnest(%(terms)s::text[]) as t(word), lateral (select to_tsquery('english', t.word) as q) x
           where numnode(x.q) > 0) d
)

-- name: search_bm25_score
-- (Shared expression, `{bm25_score}` of both full-text lists.) A turn's BM25 score: the sum over
-- the query's terms it matched (`x`: the match and its turn's length in lexemes, `d`: the term's
-- df, `s`: the scope's size n and mean length), k1 = 1.2, b = 0.75, binary term frequency. Each
-- term's share is rounded to a multiple of 2^-32, so that the sum is exact in whatever order a
-- plan adds the shares: every plan ranks turns of equal score alike (by position), where the
-- last bit of a float sum used to order them.
sum(round(ln(1 + (s.n - d.df + 0.5) / (d.df + 0.5)) * 2.2 / (1 + 1.2 * (0.25 + 0.75 * x.len / s.avglen))
          * 4294967296::float8) / 4294967296::float8) as score

-- name: search_lexical_exact
-- (Shared block.) The full-text list, exact: BM25 (`search_bm25_score`) with each term's idf and
-- the mean length counted over the whole scope in this query, smoothed over neighbours like the
-- dense list.
-- `turns` holds each tsvector detoasted once (`|| ''` builds a copy in memory): a message's row
-- passes the 2 kB TOAST threshold, so its tsvector is usually stored out of line, and a CTE
-- keeps the pointer; every length and `@@` per term would fetch it again.
turns as materialized (
  select m.id, m.conversation_id, m.seq, m.tsv || ''::tsvector as tsv from scope m
), stats as (
  select count(*)::float8 as n, greatest(avg(length(t.tsv)), 1)::float8 as avglen from turns t
), matches as (
  select q.term, t.id, length(t.tsv) as len from terms q join turns t on t.tsv @@ q.q
), bm25 as (
  select x.id,
         {bm25_score}
    from matches x
    join (select term, count(*)::float8 as df from matches group by term) d on d.term = x.term
   cross join stats s
   group by x.id
), lexical as (
  select x.id, x.conversation_id, x.seq, row_number() over (order by x.score desc, x.seq desc, x.conversation_id) as rank
    from (select t.id, t.conversation_id, t.seq,
                 coalesce(b.score, 0) + %(smooth)s::float8
                   * (coalesce(lag(b.score) over w, 0) + coalesce(lead(b.score) over w, 0)) / 2 as score
            from turns t left join bm25 b on b.id = t.id
          window w as (partition by t.conversation_id order by t.seq)) x
   where x.score > 0
   order by x.score desc, x.seq desc, x.conversation_id
   limit %(k_lexical)s
)

-- name: search_lexical_bounded
-- (Shared block.) The full-text list from the matching turns only (the GIN index under the
-- scope's filter) instead of every turn of the scope: the same BM25, up to common terms. A term
-- that matches more than k_match turns of the scope is common: it is read no further than k_match
-- + 1 matches, and it counts only in the turns a rarer term of the query matched, with that as its
-- df (Elasticsearch's common terms query; k_match is the exact scan's limit, so no scope within it
-- has a common term). Before, every term was read up to k_match matches and counted in those,
-- whichever they were: the oldest, in the table's order.
-- The scope's size n and mean length come from its conversations' counters (message_count and
-- lexeme_count, kept by the insert trigger), and a match's position and length from its row of
-- message_terms (migration 0026: ~350 bytes, where a message's row is ~2.5 kB, so no message row
-- is read for a match). `{terms_conversation}` narrows them to the conversation searched, as the
-- scope does, and `{in_range_mt}` to the time range. A time range takes part of the
-- conversations: then n is their message_count (`scope_size`, which search.py reads to choose
-- this block) and the mean length that of the range's 1,000 latest turns (`{counters}` and
-- `{sample}` say which source applies, `time_range_filter`). A turn scores only if it or a
-- neighbour matches, so smoothing spreads each match's score to seq ± 1. A term's share is
-- rounded (`search_bm25_score`), so that a list is the same whichever plan sums it, and whether
-- its common terms are read or known.
-- `{known_common}`: the terms (as tsquery text) known to be common in this scope, which are not
-- read at all (df k_match + 1, as if read); an empty array but in `search_lexical_list`, whose
-- caller remembers each scope's common terms (search.py, `CommonTerms`).
stats as (
  select c.n, c.avglen
    from (select sum(c.message_count)::float8 as n,
                 greatest(sum(c.lexeme_count)::float8 / nullif(sum(c.message_count), 0), 1) as avglen
            from memctx.conversations c
           where c.user_id = %(user_id)s::uuid {stats_conversation}) c
   where {counters}
  union all
  select %(scope_size)s::float8, greatest(avg(t.len), 1)::float8
    from (select coalesce(m.lexemes, length(m.tsv)) as len from scope m
           order by m.conversation_id desc, m.seq desc limit 1000) t
  having {sample}
), matches as materialized (
  -- from message_terms (migration 0026): the matches' narrow rows, not the messages' own. The
  -- first k_match + 1 are kept by their row number, not by a LIMIT: a generic plan takes a LIMIT
  -- of parameters for a tenth of the rows, so that a sequential scan of the whole table looked
  -- cheaper than the GIN index wherever the table is small; the window's run condition stops
  -- reading at the same match.
  select q.term, t.id, t.conversation_id, t.seq, t.len
    from terms q
   cross join lateral (select n.id, n.conversation_id, n.seq, n.len
                         from (select mt.message_id as id, mt.conversation_id, mt.seq, mt.lexemes as len,
                                      row_number() over () as n
                                 from memctx.message_terms mt
                                where mt.user_id = %(user_id)s::uuid {terms_conversation} {in_range_mt}
                                  and mt.tsv @@ q.q) n
                        where n.n <= case when q.q::text = any({known_common}) then 0 else %(k_match)s + 1 end) t
), df as materialized (
  select x.term, count(*)::float8 as df, count(*) > %(k_match)s as common from matches x group by x.term
  union all
  select q.term, %(k_match)s + 1, true from terms q where q.q::text = any({known_common})
), scored as (
  -- a rare term counts in every turn it matched
  select x.term, x.conversation_id, x.seq, x.len
    from matches x join df d on d.term = x.term
   where not d.common
  union all
  -- a common term in the turns a rare term matched: one tsquery, the common term and any rare
  -- one, whose postings the GIN index intersects, so that only those turns' rows are read (testing
  -- each rare match's tsvector by key reads thousands of rows)
  select c.term, mt.conversation_id, mt.seq, mt.lexemes
    from (select q.term, q.q from terms q join df d on d.term = q.term where d.common) c
   cross join (select string_agg('(' || q.q::text || ')', ' | ')::tsquery as q
                 from terms q join df d on d.term = q.term where not d.common) r
   cross join lateral (select mt.conversation_id, mt.seq, mt.lexemes
                         from memctx.message_terms mt
                        where mt.user_id = %(user_id)s::uuid {terms_conversation} {in_range_mt}
                          and mt.tsv @@ (c.q && r.q)) mt
   where r.q is not null and exists (select 1 from df where df.common)
), bm25 as (
  select x.conversation_id, x.seq,
         {bm25_score}
    from scored x
    join df d on d.term = x.term
   cross join stats s
   group by x.conversation_id, x.seq
), lexical_spread as (
  -- each turn's own score and its neighbours' (summed as the exact block sums them)
  select x.conversation_id, x.seq,
         coalesce(x.own, 0) + %(smooth)s::float8 * coalesce(x.sides, 0) / 2 as score
    from (select b.conversation_id, b.seq + o.d as seq, sum(b.score) filter (where o.d = 0) as own,
                 sum(b.score) filter (where o.d <> 0) as sides
            from bm25 b cross join (values (-1), (0), (1)) as o(d)
           group by b.conversation_id, b.seq + o.d) x
), lexical_top as (
  -- twice k_lexical before the join: a neighbour past either end of a conversation is no turn
  select x.* from lexical_spread x where x.score > 0 order by x.score desc, x.seq desc, x.conversation_id limit 2 * %(k_lexical)s
), lexical as (
  select m.id, x.conversation_id, x.seq, row_number() over (order by x.score desc, x.seq desc, x.conversation_id) as rank
    from lexical_top x
   cross join lateral (select m.id from scope m where m.conversation_id = x.conversation_id and m.seq = x.seq offset 0) m
   order by x.score desc, x.seq desc, x.conversation_id
   limit %(k_lexical)s
)

-- name: search_dense_none
-- (Shared block.) No dense list: the full-text half of a search split in two (search.py runs a
-- scope past the exact scan as two statements side by side on two connections, one that ranks
-- the dense list and the recent turns and one that ranks the full text, and merges their rows).
dense as (
  select null::uuid as id, null::uuid as conversation_id, null::bigint as seq, null::bigint as rank where false
)

-- name: search_lexical_none
-- (Shared block.) No full-text list: the dense half of a split search (`search_dense_none`).
lexical as (
  select null::uuid as id, null::uuid as conversation_id, null::bigint as seq, null::bigint as rank where false
)

-- name: search_lexical_given
-- (Shared block.) The full-text list a statement of its own ranked (`search_lexical_list`),
-- given back as arrays: the rows of its hits need the query's vector (their similarity, their
-- best passage), the list does not. The arrays go in binary (their placeholders end in b, not
-- s): as text, psycopg writes a list of UUIDs through each one's str().
lexical as (
  select l.id, l.conversation_id, l.seq, l.rank
    from unnest(%(lexical_ids)b::uuid[], %(lexical_conversations)b::uuid[], %(lexical_seqs)b::bigint[],
                %(lexical_ranks)b::bigint[]) as l(id, conversation_id, seq, rank)
)

-- name: search_lexical_list
-- The full-text list of a search past the exact scan, alone: search.py runs it while the query
-- is embedded, then the rows of its hits (the search's template with `search_lexical_given`) once
-- the vector is there. Where the full text is the longer part (a heavy user's), it does not
-- wait for the embedding. Each row names the query's common terms (`common_terms`, tsquery
-- text), which the caller remembers for the scope and gives back as `known_common`: they are
-- not read again.
with {scope}, {lexical}
select l.id, l.conversation_id, l.seq, l.rank,
       (select array_agg(q.q::text) from terms q join df d on d.term = q.term where d.common) as common_terms
  from lexical l

-- name: search_conversation
-- Candidates of one conversation: the relevance lists, the most recent k, each with its rank,
-- plus the neighbours (±window turns) of every candidate for pairing and context.
with {scope}, {passages}, {dense}, {lexical}, recent as (
  select m.id, m.conversation_id, m.seq, row_number() over (order by m.seq desc) as rank
    from scope m
   where m.text <> ''
   order by m.seq desc
   limit %(k_recent)s
), {hits}
{message_rows}
 order by seq

-- name: search_user
-- Candidates across all of a user's conversations: the same relevance lists over all of the
-- user's messages (exact scans over the user_id btree), the most recent k, with neighbours.
-- Their summaries come from `search_user_summaries`, a statement of its own (search.py runs it
-- beside this one, on a second connection when the pool has one free; after whichever part ends
-- first, on its connection, when the search is split in two, `search_dense_none`).
with {scope}, {passages}, {dense}, {lexical}, recent as (
  select m.id, m.conversation_id, m.seq, row_number() over (order by m.created_at desc, m.seq desc) as rank
    from scope m
   where m.text <> ''
   order by m.created_at desc, m.seq desc
   limit %(k_recent)s
), {hits}
{message_rows}
 order by 3, 4

-- name: search_user_summaries
-- The live summaries and long-term conversation summaries of a user-wide search (`search_user`'s
-- scope and parameters), as rows of the same columns: ranked on the relevance signals, the best
-- k_dense and k_lexical of each. Apart from the turns' statement, so that both run at once.
with {scope}, summary_hits as (
  -- the query's tsquery in a subquery, made once: as a parameter's function, a generic plan made
  -- it again for every summary
  select s.id, 'summary'::text as kind, s.conversation_id, s.content, s.first_seq, s.last_seq, s.token_count,
         s.created_at, 1 - (v.embedding <=> %(query_vec)s::vector) as similarity,
         ts_rank_cd(s.tsv, (select to_tsquery('english', %(tsquery)s::text)), 1) as lexical_score
    from memctx.live_summaries s
    join memctx.summaries v on v.id = s.id and v.user_id = s.user_id  -- the view leaves the vector out (0009)
   where s.user_id = %(user_id)s::uuid
  union all
  select l.conversation_id, 'conversation_summary', l.conversation_id, l.summary, l.first_seq, l.last_seq,
         l.token_count, l.updated_at, 1 - (l.embedding <=> %(query_vec)s::vector),
         ts_rank_cd(l.tsv, (select to_tsquery('english', %(tsquery)s::text)), 1)
    from memctx.conversation_summaries l
   where l.user_id = %(user_id)s::uuid
), summaries_in_scope as (
  -- A summary is in the search's scope when it covers a message in scope: said within the time
  -- range, if one is given.
  select sh.* from summary_hits sh
   where exists (select 1 from scope m
                  where m.conversation_id = sh.conversation_id and m.seq between sh.first_seq and sh.last_seq)
), summary_ranked as (
  -- Summaries are ranked on the relevance signals (their columns here); the others'
  -- ranks are null for a summary. Ties (summaries of a few words often score alike) go by id.
  select sh.*,
         case when sh.similarity is not null
              then row_number() over (order by sh.similarity desc nulls last, sh.id) end as dense_rank,
         case when sh.lexical_score > 0
              then row_number() over (order by sh.lexical_score desc, sh.id) end as lexical_rank
    from summaries_in_scope sh
)
select sr.kind, sr.id, sr.conversation_id, null::bigint as seq, sr.first_seq, sr.last_seq, 'summary' as role,
       sr.content as text, null::text as external_id, sr.token_count, sr.created_at, null::text as speaker,
       null::int as session, sr.similarity, {summary_ranks}, true as is_hit, null::uuid as passage_id,
       null::text as passage_text, null::int as passage_tokens
  from summary_ranked sr
 where sr.dense_rank <= %(k_dense)s or sr.lexical_rank <= %(k_lexical)s
 order by 3, 1, 2

-- name: search_plan_inputs
-- What memctx/retrieve/search.py chooses a search's plan from: the messages in its scope (the
-- conversations' message_count, kept by the insert trigger), the table's estimated rows (0
-- before the first ANALYZE), whether 0026 could build the full-text index that serves a
-- user's or a conversation's matches (it needs btree_gin), and whether the worker has built the
-- user an HNSW index of their own (memctx/pipeline/user_index.py; a build still running is not
-- valid yet), and whether pgvector scans HNSW iteratively (0.8 and later; see
-- `search_hnsw_settings`).
select coalesce(sum(c.message_count), 0)::bigint as scope_size,
       (select greatest(t.reltuples, 0)::bigint from pg_class t where t.oid = 'memctx.messages'::regclass)
         as table_rows,
       to_regclass('memctx.message_terms_scope_tsv_idx') is not null as scope_tsv_index,
       exists (select 1 from pg_catalog.pg_index i
                where i.indexrelid = to_regclass('memctx.messages_hnsw_user_' || replace(%(user_id)s::text, '-', ''))
                  and i.indisvalid) as own_index,
       coalesce((select (regexp_match(e.extversion, '^(\d+)\.(\d+)'))::int[] >= '{0,8}'::int[]
                   from pg_catalog.pg_extension e where e.extname = 'vector'), false) as iterative_scan
  from memctx.conversations c
 where c.user_id = %(user_id)s::uuid
   and (%(conversation_id)s::uuid is null or c.id = %(conversation_id)s::uuid)

-- name: search_hnsw_settings
-- The HNSW settings of the index plan, for the rest of the transaction: only that plan runs it
-- (the other plans never scan HNSW), and only on pgvector 0.8 or later.
select set_config('hnsw.iterative_scan', 'relaxed_order', true) as iterative_scan,
       set_config('hnsw.ef_search', %(ef_search)s::text, true) as ef_search,
       set_config('hnsw.max_scan_tuples', %(max_scan_tuples)s::text, true) as max_scan_tuples

-- name: search_hnsw_ef_search
-- `search_hnsw_settings` for pgvector before 0.8 (0.7 has the quantized plan's bit type and
-- binary_quantize), which has no iterative scans. Setting either of their parameters fails
-- there: pgvector reserves the `hnsw.` prefix once loaded, so an unknown `hnsw.*` name is an
-- error, not a placeholder. A scan then yields at most ef_search tuples, which only a user's
-- own index fills with that user's turns (`choose_plan`).
select set_config('hnsw.ef_search', %(ef_search)s::text, true) as ef_search

-- name: search_transaction_settings
-- For the rest of the transaction (search.py runs it before every search statement):
-- * no JIT compilation. The planner compiles a statement whose estimated cost passes
--   jit_above_cost (100,000 by default) where the server has LLVM (Debian's and most managed
--   servers' packages do; the embedded ones here do not): a heavy user's dense part through the
--   index plan is estimated past it (its fallback scan of the user's rows, which never runs, is
--   costed in), and compiling costs more than the statement runs;
-- * at most `parallel_workers` parallel workers per scan (0 by default; null leaves the
--   server's setting). Past the exact scan, a user of a few thousand turns got a parallel bitmap
--   scan whose workers sorted every row, vector included, for the dense list's window (a sort that
--   spilled to disk) and whose start-up alone could take longer than the whole serial search on a
--   busy machine; serial, the planner reads the same rows in (user_id, conversation_id, seq) order
--   from messages_user_idx and sorts nothing;
-- * the plans of prepared statements (`plan_cache_mode`; search.py prepares every search
--   statement): the generic plan for the bounded searches within the exact scan, whose custom
--   plans took over a third of their time to make, else a custom plan, made for the values, of a
--   statement parsed once per connection.
select set_config('jit', 'off', true) as jit,
       case when %(parallel_workers)s::int is not null
            then set_config('max_parallel_workers_per_gather', %(parallel_workers)s::text, true) end as parallel_workers,
       set_config('plan_cache_mode', %(plan_cache_mode)s, true) as plan_cache_mode

-- name: search_global_dense
-- Nearest messages across all users through the HNSW index (operators, benchmarks). The
-- caller sets hnsw.ef_search; no filter, so the index returns the full top-k.
select m.id, m.conversation_id, m.user_id, m.seq, 1 - (m.embedding <=> %(query_vec)s::vector) as similarity
  from memctx.messages m
 order by m.embedding <=> %(query_vec)s::vector
 limit %(k_dense)s

-- name: current_context
-- Everything `get_working_context` shows as the conversation's current state, in one round
-- trip: the live summaries (master first), the summary board, and the most recent raw turns --
-- or every turn, when the whole history may fit `history_tokens` (its turns as chat messages,
-- each at least 4 tokens more than its text: see memctx/assemble/budget.py). That sum is read
-- only for a conversation of at most `history_limit` turns (fewer could not fit), and the
-- conversation row carries message_count so the caller knows whether it holds every turn.
with conv as (
  select c.id, c.last_seq, c.message_count from memctx.conversations c
   where c.id = %(conversation_id)s::uuid and c.user_id = %(user_id)s::uuid
), live as (
  select s.id, s.level, s.is_master, s.content, s.first_seq, s.last_seq, s.token_count
    from memctx.live_summaries s join conv on s.conversation_id = conv.id
   where s.user_id = %(user_id)s::uuid
), whole as (
  select sum(coalesce(h.token_count, 0) + 4) as tokens
    from memctx.messages h
   where h.user_id = %(user_id)s::uuid and h.conversation_id = %(conversation_id)s::uuid
     and (select c.message_count from memctx.conversations c
           where c.id = %(conversation_id)s::uuid and c.user_id = %(user_id)s::uuid) <= %(history_limit)s
), recent as (
  -- The conversation by its parameter, not through conv: a join hides the value from the
  -- planner, which then reads every turn of the conversation and sorts them instead of reading
  -- the last few backwards from (user_id, conversation_id, seq).
  select m.id, m.seq, m.role, m.text, m.external_id, m.token_count, m.created_at,
         m.metadata ->> 'speaker' as speaker, (m.metadata ->> 'session')::int as session
    from memctx.messages m
   where m.user_id = %(user_id)s::uuid and m.conversation_id = %(conversation_id)s::uuid
   order by m.seq desc
   limit case when (select w.tokens from whole w) <= %(history_tokens)s
              then greatest(%(history_limit)s, %(recent_limit)s) else %(recent_limit)s end
)
select 'conversation' as kind, conv.id, null::int as level, null::boolean as is_master, null::text as content,
       null::bigint as first_seq, conv.last_seq, null::int as token_count, null::text as role,
       null::text as external_id, null::timestamptz as created_at, null::text as speaker, null::int as session,
       null::jsonb as board, conv.message_count
  from conv
union all
select 'summary', l.id, l.level, l.is_master, l.content, l.first_seq, l.last_seq, l.token_count, null, null,
       null, null, null, null, null
  from live l
union all
select 'board', b.conversation_id, null, null, b.current_summary, null, b.last_seq, null, null, null,
       b.updated_at, null, null,
       jsonb_build_object('key_facts', b.items -> 'key_facts', 'constraints', b.items -> 'constraints'), null
  from memctx.summary_boards b join conv on b.conversation_id = conv.id
 where b.user_id = %(user_id)s::uuid
union all
select 'message', r.id, null, null, r.text, r.seq, r.seq, r.token_count, r.role, r.external_id, r.created_at,
       r.speaker, r.session, null, null
  from recent r

-- name: rank_conversation
-- Every message of one conversation with its cosine similarity and full-text score, for the
-- evaluation's baselines (dense-only, full-text-only, recency). Not on the live path.
select m.id, m.seq, m.role, m.text, m.external_id, m.token_count, m.created_at,
       m.metadata ->> 'speaker' as speaker, (m.metadata ->> 'session')::int as session,
       1 - (m.embedding <=> %(query_vec)s::vector) as similarity,
       ts_rank_cd(m.tsv, to_tsquery('english', %(tsquery)s::text), 1) as lexical_score
  from memctx.messages m
 where m.conversation_id = %(conversation_id)s::uuid and m.user_id = %(user_id)s::uuid
 order by m.seq

-- name: rank_user
-- Every message of a user with its cosine similarity to the query over its stored vector, in
-- the order said, for the whole-turn baselines of the cross-conversation evaluation (their
-- full-text ranking is computed in memctx/evaluate/baselines.py). Not on the live path.
select m.id, m.conversation_id, m.seq, m.role, m.text, m.external_id, m.token_count, m.created_at,
       m.metadata ->> 'speaker' as speaker, (m.metadata ->> 'session')::int as session,
       1 - (m.embedding <=> %(query_vec)s::vector) as similarity
  from memctx.messages m
 where m.user_id = %(user_id)s::uuid
 order by m.created_at, m.seq

-- name: conversation_speakers
-- The speaker names (metadata.speaker) of a conversation, or of all of the user's conversations
-- when conversation_id is null, for query analysis: the names each conversation keeps (0027),
-- not every message of the scope. Cached by callers.
select distinct s.speaker
  from memctx.conversations c
 cross join lateral unnest(c.speakers) as s(speaker)
 where c.user_id = %(user_id)s::uuid
   and (%(conversation_id)s::uuid is null or c.id = %(conversation_id)s::uuid)

-- name: conversation_labels
-- The title and external id of conversations a context's memories come from (the one asked in
-- excepted), which name them in it. Cached by callers: neither changes after creation.
select c.id, c.title, c.external_id
  from memctx.conversations c
 where c.user_id = %(user_id)s::uuid and c.id = any(%(ids)s::uuid[])
