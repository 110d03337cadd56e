-- Memory search and context assembly: candidate generation in one round trip per retrieval.
--
-- Dense candidates are exact scans over a btree-selected subset (one conversation, one user):
-- ordering by `(embedding <=> q) + 0` is an expression the HNSW index cannot serve, so the
-- planner never trades the exact top-k for an index scan that returns at most ef_search rows
-- before the filter (the prepared-statement pitfall of PERFORMANCE-NOTES.md). HNSW is used only
-- by `search_global_dense`, which has no filter.
--
-- The two search queries are templates: memctx/retrieve/queries.py fills their placeholders in
-- braces once, at import, with the shared blocks below (`search_scope`, `search_message_lists`,
-- `search_hits`, `search_message_rows`) and with the per-signal columns it generates from the list of
-- retrieval signals (memctx/retrieve/signals.py). A signal is a CTE of both queries named after
-- the signal's `cte`, with columns (id, rank): 1-based rank, best first, within its top k.
-- Braces are reserved for placeholders in these blocks, comments included.
--
-- Parameters shared by the search blocks:
--   user_id, conversation_id   the scope: a user's memory, or one conversation of it (null = all)
--   query_vec  vector   the embedded query
--   tsquery    text     an OR query of sanitized terms for to_tsquery('english', …); '' = none
--   since/until         optional created_at range [since, until)
--   k_dense, k_lexical, k_recent, window
--
-- A message without searchable text (text = '': thinking only, an image without caption) is
-- never a candidate: it has no embedding (migration 0005) and no lexemes, and recency alone
-- never makes a hit. It can still appear as a neighbour of a hit.

-- name: search_scope
-- (Shared block.) The messages a search may find: the user's, in one conversation when
-- conversation_id is set, created in [since, until). Not materialized: every list reads it
-- through its own index, and the planner folds the null tests of the (unprepared) query.
scope as not materialized (
  select m.*
    from memctx.messages m
   where m.user_id = %(user_id)s::uuid
     and (%(conversation_id)s::uuid is null or m.conversation_id = %(conversation_id)s::uuid)
     and (%(since)s::timestamptz is null or m.created_at >= %(since)s::timestamptz)
     and (%(until)s::timestamptz is null or m.created_at < %(until)s::timestamptz)
)

-- name: search_hits
-- (Shared block.) Every candidate message once, with its rank in each signal's list (null = not
-- in it); then the hits' positions and the ids of the hits and their ±window neighbours (never
-- limited to the scope's time range: a hit keeps its pair).
hits as (
  select c.id, {ranks}
    from ({candidates}) c
   group by c.id
), hit_rows as (
  select m.conversation_id, m.seq from hits join memctx.messages m on m.id = hits.id
), wanted as (
  select distinct m.id
    from hit_rows h
    join memctx.messages m
      on m.conversation_id = h.conversation_id
     and m.seq between h.seq - %(window)s and h.seq + %(window)s
)

-- name: search_message_rows
-- (Shared block.) The rows of the hits and their neighbours, each with its ranks.
select 'message'::text as kind, m.id, m.conversation_id, m.seq, m.seq as first_seq, m.seq as last_seq,
       m.role, m.text, m.external_id, m.token_count, m.created_at,
       m.metadata ->> 'speaker' as speaker, (m.metadata ->> 'session')::int as session,
       1 - (m.embedding <=> %(query_vec)s::vector) as similarity,
       {hit_ranks}, hits.id is not null as is_hit
  from wanted w
  join memctx.messages m on m.id = w.id
  left join hits on hits.id = w.id

-- name: search_message_lists
-- (Shared block.) The relevance lists over the scope's messages: dense top-k and full-text
-- (BM25) top-k, each with its rank. Both are smoothed over neighbouring turns of the same
-- conversation: a turn inside a relevant stretch of conversation ranks above an isolated
-- look-alike (smooth = 0 turns this off).
turns as (
  select m.id, m.conversation_id, m.seq, length(m.tsv) as len, m.tsv,
         case when m.embedding is not null and m.text <> '' then 1 - (m.embedding <=> %(query_vec)s::vector) end as sim
    from scope m
), dense as (
  select x.id, row_number() over (order by x.score desc, x.seq desc) as rank
    from (select t.id, t.seq,
                 t.sim + %(smooth)s::float8 * (coalesce(lag(t.sim) over w, 0) + coalesce(lead(t.sim) over w, 0)) / 2
                   as score
            from turns t window w as (partition by t.conversation_id order by t.seq)) x
   where x.score is not null
   order by x.score desc, x.seq desc
   limit %(k_dense)s
), terms as (
  -- BM25 with binary term frequency: rare words weigh more than common ones (ts_rank_cd
  -- weighs every query word alike), longer turns are damped.
  select distinct x.q
    from unnest(%(terms)s::text[]) as t(word), lateral (select to_tsquery('english', t.word) as q) x
   where numnode(x.q) > 0
), stats as (
  select count(*)::float8 as n, greatest(avg(t.len), 1)::float8 as avglen from turns t
), matches as (
  select q.q, t.id, t.len from terms q join turns t on t.tsv @@ q.q
), bm25 as (
  select x.id,
         sum(ln(1 + (s.n - d.df + 0.5) / (d.df + 0.5)) * 2.2 / (1 + 1.2 * (0.25 + 0.75 * x.len / s.avglen))) as score
    from matches x
    join (select q, count(*)::float8 as df from matches group by q) d on d.q = x.q
   cross join stats s
   group by x.id
), lexical as (
  select x.id, row_number() over (order by x.score desc, x.seq desc) as rank
    from (select t.id, t.seq,
                 coalesce(b.score, 0) + %(smooth)s::float8
                   * (coalesce(lag(b.score) over w, 0) + coalesce(lead(b.score) over w, 0)) / 2 as score
            from turns t left join bm25 b on b.id = t.id
          window w as (partition by t.conversation_id order by t.seq)) x
   where x.score > 0
   order by x.score desc, x.seq desc
   limit %(k_lexical)s
)

-- name: search_conversation
-- Candidates of one conversation: the relevance lists, the most recent k, each with its rank,
-- plus the neighbours (±window turns) of every candidate for pairing and context.
with {scope}, {message_lists}, recent as (
  select m.id, row_number() over (order by m.seq desc) as rank
    from scope m
   where m.text <> ''
   order by m.seq desc
   limit %(k_recent)s
), {hits}
{message_rows}
 order by seq

-- name: search_user
-- Candidates across all of a user's conversations: the same relevance lists over all of the
-- user's messages (exact scans over the user_id btree), the most recent k, with neighbours; and
-- their live summaries and long-term conversation summaries.
with {scope}, {message_lists}, recent as (
  select m.id, row_number() over (order by m.created_at desc, m.seq desc) as rank
    from scope m
   where m.text <> ''
   order by m.created_at desc, m.seq desc
   limit %(k_recent)s
), {hits}, summary_hits as (
  select s.id, 'summary'::text as kind, s.conversation_id, s.content, s.first_seq, s.last_seq, s.token_count,
         s.created_at, 1 - (v.embedding <=> %(query_vec)s::vector) as similarity,
         ts_rank_cd(s.tsv, to_tsquery('english', %(tsquery)s::text), 1) as lexical_score
    from memctx.live_summaries s
    join memctx.summaries v on v.id = s.id  -- the view leaves the vector out (migration 0009)
   where s.user_id = %(user_id)s::uuid
  union all
  select l.conversation_id, 'conversation_summary', l.conversation_id, l.summary, l.first_seq, l.last_seq,
         l.token_count, l.updated_at, 1 - (l.embedding <=> %(query_vec)s::vector),
         ts_rank_cd(l.tsv, to_tsquery('english', %(tsquery)s::text), 1)
    from memctx.conversation_summaries l
   where l.user_id = %(user_id)s::uuid
), summaries_in_scope as (
  -- A summary is in the search's scope when it covers a message in scope: of the conversation
  -- searched, if one is, and said within the time range, if one is given.
  select sh.* from summary_hits sh
   where exists (select 1 from scope m
                  where m.conversation_id = sh.conversation_id and m.seq between sh.first_seq and sh.last_seq)
), summary_ranked as (
  -- Summaries are ranked on the relevance signals (their columns here); the others'
  -- ranks are null for a summary.
  select sh.*,
         case when sh.similarity is not null
              then row_number() over (order by sh.similarity desc nulls last) end as dense_rank,
         case when sh.lexical_score > 0
              then row_number() over (order by sh.lexical_score desc) end as lexical_rank
    from summaries_in_scope sh
)
{message_rows}
union all
select sr.kind, sr.id, sr.conversation_id, null, sr.first_seq, sr.last_seq, 'summary', sr.content, null,
       sr.token_count, sr.created_at, null, null, sr.similarity, {summary_ranks}, true
  from summary_ranked sr
 where sr.dense_rank <= %(k_dense)s or sr.lexical_rank <= %(k_lexical)s
 order by 3, 4 nulls first

-- name: search_global_dense
-- Nearest messages across all users through the HNSW index (operators, benchmarks). The
-- caller sets hnsw.ef_search; no filter, so the index returns the full top-k.
select m.id, m.conversation_id, m.user_id, m.seq, 1 - (m.embedding <=> %(query_vec)s::vector) as similarity
  from memctx.messages m
 order by m.embedding <=> %(query_vec)s::vector
 limit %(k_dense)s

-- name: current_context
-- Everything `get_working_context` shows as the conversation's current state, in one round
-- trip: the live summaries (master first), the summary board, and the most recent raw turns.
with conv as (
  select c.id, c.last_seq from memctx.conversations c
   where c.id = %(conversation_id)s::uuid and c.user_id = %(user_id)s::uuid
), live as (
  select s.id, s.level, s.is_master, s.content, s.first_seq, s.last_seq, s.token_count
    from memctx.live_summaries s join conv on s.conversation_id = conv.id
), recent as (
  select m.id, m.seq, m.role, m.text, m.external_id, m.token_count, m.created_at,
         m.metadata ->> 'speaker' as speaker, (m.metadata ->> 'session')::int as session
    from memctx.messages m join conv on m.conversation_id = conv.id
   where m.user_id = %(user_id)s::uuid
   order by m.seq desc
   limit %(recent_limit)s
)
select 'conversation' as kind, conv.id, null::int as level, null::boolean as is_master, null::text as content,
       null::bigint as first_seq, conv.last_seq, null::int as token_count, null::text as role,
       null::text as external_id, null::timestamptz as created_at, null::text as speaker, null::int as session,
       null::jsonb as board
  from conv
union all
select 'summary', l.id, l.level, l.is_master, l.content, l.first_seq, l.last_seq, l.token_count, null, null,
       null, null, null, null
  from live l
union all
select 'board', b.conversation_id, null, null, b.current_summary, null, b.last_seq, null, null, null,
       b.updated_at, null, null,
       jsonb_build_object('key_facts', b.items -> 'key_facts', 'constraints', b.items -> 'constraints')
  from memctx.summary_boards b join conv on b.conversation_id = conv.id
union all
select 'message', r.id, null, null, r.text, r.seq, r.seq, r.token_count, r.role, r.external_id, r.created_at,
       r.speaker, r.session, null
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

-- name: conversation_speakers
-- The speaker names (metadata.speaker) of a conversation, or of all of the user's conversations
-- when conversation_id is null, for query analysis; cached by callers.
select distinct m.metadata ->> 'speaker' as speaker
  from memctx.messages m
 where m.user_id = %(user_id)s::uuid
   and (%(conversation_id)s::uuid is null or m.conversation_id = %(conversation_id)s::uuid)
   and m.metadata ? 'speaker'
