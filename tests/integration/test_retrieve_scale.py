"""Memory search past the exact scan: the HNSW plan and the bounded full text against
the exact plan, on the same data, in a real Postgres with other users' rows in the table."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import numpy as np
import psycopg
import pytest
from psycopg.rows import dict_row

from memctx.models import NewMessage
from memctx.retrieve import MemorySearch, SearchOptions
from memctx.retrieve.queries import PLANS, SEARCH_QUERIES, compose
from memctx.retrieve.search import _search_settings, choose_plan, hnsw_settings, plan_of, pool_size, runs_generic
from memctx.sql import QUERIES

WORDS = ("pottery hiking dolomites budget jazz concert sourdough wedding collie garden tomatoes marathon guitar "
         "novel museum kayak curry exam promotion sunset").split()
TOPICS = 40


def _centers(rng) -> np.ndarray:
    """TOPICS unit vectors, the topics turns are drawn around (`_load`)."""
    centers = rng.standard_normal((TOPICS, 384))
    return centers / np.linalg.norm(centers, axis=1, keepdims=True)


def _load(app, user, conversations: int, per: int, rng, centers, noise: float = 0.35) -> list[uuid.UUID]:
    """Conversations of clustered vectors (a topic per stretch of turns, as in a real chat; `noise`
    per dimension around the topic's unit center) and texts of a few words from WORDS."""
    ids = []
    for c in range(conversations):
        conv = app.store.create_conversation(user, external_id=f"scale-{c}")
        topics = np.repeat(rng.integers(0, TOPICS, per // 10 + 1), 10)[:per]
        vecs = centers[topics] + noise * rng.standard_normal((per, centers.shape[1]))
        vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
        msgs = [NewMessage.build("user" if i % 2 == 0 else "assistant", " ".join(rng.choice(WORDS, rng.integers(3, 16))),
                                 external_id=f"m{i}") for i in range(per)]
        app.store.append_messages(user, conv.id, msgs, embeddings=vecs)
        ids.append(conv.id)
    return ids


@pytest.fixture
def loaded(app):
    rng = np.random.default_rng(13)
    centers = _centers(rng)
    user = uuid.uuid4()
    convs = _load(app, user, conversations=3, per=600, rng=rng, centers=centers)
    for _ in range(2):  # other users' rows: the index scan must skip them
        _load(app, uuid.uuid4(), conversations=1, per=900, rng=rng, centers=centers)
    return user, convs, centers, rng


def _query(rng, centers):
    vec = centers[rng.integers(0, TOPICS)] + 0.5 * rng.standard_normal(centers.shape[1])
    return (vec / np.linalg.norm(vec)).astype(np.float32)


def _params(user, conv, vec, opts: SearchOptions, terms=(), scope_size=0):
    return {"user_id": user, "conversation_id": conv, "query_vec": vec, "tsquery": " | ".join(terms),
            "terms": list(terms), "since": None, "until": None, "k_dense": opts.k_dense, "k_lexical": opts.k_lexical,
            "k_recent": 0, "window": 0, "pair": False, "smooth": opts.smooth, "k_pool": pool_size(opts), "k_match": opts.k_match,
            "scope_size": scope_size, "ef_search": min(pool_size(opts), 1000), "max_scan_tuples": opts.max_scan_tuples}


def _ranked(rows, column):
    return [r["id"] for r in sorted((r for r in rows if r[column] is not None), key=lambda r: r[column])]


def test_the_plan_follows_the_scope_size_and_its_share_of_the_table():
    opts = SearchOptions(k_dense=200, k_pool=600)
    assert choose_plan(700, 1_000_000, opts) == "exact"  # every LoCoMo conversation
    # with an index that serves the scope's matches, its full text reads only them (exact too)
    assert choose_plan(700, 1_000_000, opts, matches_indexed=True) == "bounded"
    assert choose_plan(700, 1_000_000, opts, matches_indexed=True, ranged=True) == "exact"  # counters hold no range
    assert choose_plan(5_000, 1_000_000, opts) == "bounded"  # 0.5 % of the table: the index scan would visit 120k
    assert choose_plan(100_000, 1_000_000, opts) == "index"  # 10 %: about 6,000 visits instead of 100k rows
    assert choose_plan(100_000, 0, opts) == "index"  # never analyzed: the scope is taken for the table
    assert choose_plan(100_000, 1_000_000, SearchOptions(k_dense=200, k_pool=600, max_scan_tuples=5_000)) == "bounded"
    # pgvector before 0.8: a filtered index scan stops at ef_search tuples, so only a user's own
    # index (which holds that user alone) serves the pool
    assert choose_plan(100_000, 1_000_000, opts, iterative=False) == "bounded"
    assert choose_plan(100_000, 1_000_000, opts, user_wide=True, iterative=False) == "quantized"
    assert choose_plan(100_000, 1_000_000, opts, user_wide=True, own_index=True, iterative=False) == "index"



def test_a_search_transaction_compiles_nothing_and_sets_its_workers_and_hnsw_settings(app):
    """No JIT in a search's transaction (a heavy user's dense part passes jit_above_cost where the
    server has LLVM), its parallel workers when set, its prepared statements' plans, the index
    plan's HNSW settings; the connection's own settings again after it."""
    show = "select current_setting('jit') as jit, current_setting('max_parallel_workers_per_gather') as workers, " \
           "current_setting('hnsw.ef_search', true) as ef_search, current_setting('plan_cache_mode') as plans"
    with psycopg.connect(app.url, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("select '[1]'::vector")  # pgvector loaded: its hnsw.* settings exist
        conn.execute("set jit = on")
        before = conn.execute(show).fetchone()
        for workers, plan, plans in ((0, "index", "force_custom_plan"), (None, "bounded", "force_generic_plan")):
            with conn.transaction():
                _search_settings(conn, hnsw_settings(plan, True), {"parallel_workers": workers, "ef_search": 123,
                                                                   "max_scan_tuples": 20000, "plan_cache_mode": plans})
                during = conn.execute(show).fetchone()
            assert during["jit"] == "off" and during["plans"] == plans
            assert during["workers"] == ("0" if workers == 0 else before["workers"])
            assert during["ef_search"] == ("123" if plan == "index" else before["ef_search"])
            assert conn.execute(show).fetchone() == before


def test_bounded_searches_run_generic_plans_whatever_their_size():
    assert runs_generic("bounded")
    assert not runs_generic("exact") and not runs_generic("index")
    assert runs_generic("quantized") and not runs_generic("quantized", ranged=True)  # see test_retrieve_unranged
    assert runs_generic("index", own=True)  # through the user's own index, the user written in the statement
    inputs = {"table_rows": 1_000_000, "scope_tsv_index": True, "own_index": False, "iterative_scan": True}
    within = plan_of({**inputs, "scope_size": 2_000}, SearchOptions(), None, uuid.uuid4())
    past = plan_of({**inputs, "scope_size": 5_000}, SearchOptions(), None, uuid.uuid4())
    assert (within.plan, within.generic, within.split) == ("bounded", True, False)
    assert (past.plan, past.generic, past.split) == ("bounded", True, True)  # split, its dense part generic
    assert past.params["plan_cache_mode"] == "force_generic_plan"


@pytest.mark.parametrize("analyzed", [False, True])
def test_index_plan_never_comes_back_short_through_the_prepared_path(app, loaded, analyzed):
    """The HNSW scan under a filter returns at most ef_search rows when iterative scans are off (or
    from a plan prepared before ANALYZE): the exact scan then gives the pool, never fewer turns."""
    user, convs, centers, rng = loaded
    if analyzed:
        with app.pool.connection() as conn:
            conn.execute("analyze memctx.messages")
    opts = SearchOptions(k_dense=120, k_pool=360, smooth=1.0)  # far above ef_search (40)
    for conv in (convs[0], None):
        name = "search_conversation" if conv else "search_user"
        for set_hnsw in (False, True):
            with app.pool.connection() as conn:
                for i in range(8):  # psycopg prepares after 5 executions
                    params = _params(user, conv, _query(rng, centers), opts, scope_size=600)
                    if set_hnsw:  # the settings search.py gives the index plan's transaction
                        conn.execute(QUERIES["search_hnsw_settings"], params)
                    rows = conn.execute(SEARCH_QUERIES[(name, "index")], params, prepare=True).fetchall()
                    dense = [r for r in rows if r["dense_rank"] is not None]
                    assert len(dense) == opts.k_dense, f"{name} run {i}: {len(dense)} dense candidates"


def test_index_plan_recall_at_50_against_the_exact_scan(app, loaded):
    """Dense recall@50 of the HNSW plan (pool of 150, rescored with neighbours) against the exact
    plan's list on the same data, smoothed and not."""
    user, convs, centers, rng = loaded
    with app.pool.connection() as conn:
        conn.execute("analyze memctx.messages")
    recalls = {}
    for smooth in (0.0, 1.0):
        opts = SearchOptions(k_dense=50, k_pool=150, k_lexical=1, smooth=smooth)
        for i in range(20):
            vec = _query(rng, centers)
            conv = convs[i % 3] if i % 2 else None
            name = "search_conversation" if conv else "search_user"
            lists = {}
            for plan in ("exact", "index"):
                with app.pool.connection() as conn:
                    params = _params(user, conv, vec, opts, scope_size=1800)
                    conn.execute(QUERIES["search_hnsw_settings"], params)
                    rows = conn.execute(SEARCH_QUERIES[(name, plan)], params, prepare=False).fetchall()
                lists[plan] = _ranked(rows, "dense_rank")
            assert len(lists["exact"]) == len(lists["index"]) == 50
            recalls.setdefault(smooth, []).append(len(set(lists["exact"]) & set(lists["index"])) / 50)
    means = {smooth: float(np.mean(r)) for smooth, r in recalls.items()}
    print("dense recall@50 of the index plan:", means, "min", {s: min(r) for s, r in recalls.items()})
    assert all(m >= 0.95 for m in means.values()), recalls


def test_the_exact_plans_rank_dense_turns_as_the_window_does(app, loaded):
    """The exact plans rank the scope's turns from arrays (`search_dense_rank_scope`); the pool
    plans' window (`search_dense_rank`) gives the same ranks on the same turns: across
    conversations and at their edges, around turns without a similarity (no vector, no text), and
    with passages above their messages' own similarity."""
    user, convs, centers, rng = loaded
    with app.pool.connection() as conn:
        conn.execute("update memctx.messages set embedding = null where user_id = %s and seq %% 7 = 3", (user,))
        conn.execute("update memctx.messages set text = '' where user_id = %s and seq %% 11 = 5", (user,))
        # a passage of every 13th turn, close to a topic's center (some queries' nearest)
        for row in conn.execute("select id, conversation_id, seq from memctx.messages where user_id = %s "
                                "and seq %% 13 = 0", (user,)).fetchall():
            vec = centers[row["seq"] % TOPICS] + 0.1 * rng.standard_normal(centers.shape[1])
            conn.execute("insert into memctx.working_memory_chunks (conversation_id, user_id, chunk_text, message_ids, "
                         "chunk_type, token_count, embedding, created_at, message_id, part) "
                         "select m.conversation_id, m.user_id, 'a passage', array[m.id], 'passage', 2, %s, m.created_at, "
                         "m.id, 0 from memctx.messages m where m.id = %s",
                         ((vec / np.linalg.norm(vec)).astype(np.float32), row["id"]))
    window = {**QUERIES, "search_dense_rank_scope": QUERIES["search_dense_rank"]}
    compared = 0
    for i in range(12):
        vec = _query(rng, centers)
        conv = convs[i % 3] if i % 2 else None
        name = "search_conversation" if conv else "search_user"
        for smooth in (0.0, 1.0):
            opts = SearchOptions(k_dense=80, k_lexical=1, smooth=smooth)
            for plan in ("exact", "bounded"):
                ranks = []
                for query in (SEARCH_QUERIES[(name, plan)], compose(name, queries=window, plan=plan)):
                    with app.pool.connection() as conn:
                        rows = conn.execute(query, _params(user, conv, vec, opts, ["kayak"], 1800),
                                            prepare=False).fetchall()
                    ranks.append({r["id"]: r["dense_rank"] for r in rows if r["dense_rank"] is not None})
                assert len(ranks[0]) == 80 and ranks[0] == ranks[1], (name, smooth, plan)
                compared += 1
    assert compared == 48


def test_bounded_full_text_ranks_as_the_exact_one(app, loaded):
    """Reading only the matching turns gives the exact BM25 list, smoothing included, when no term
    passes k_match (as no term of a scope within the exact scan can): the scope's size and mean length from its conversations' counters, or, under a
    time range, from the range's latest 1,000 turns (here all of them)."""
    user, convs, centers, rng = loaded
    opts = SearchOptions(k_dense=1, k_lexical=60, smooth=1.0)
    with app.pool.connection() as conn:
        counted = conn.execute("select c.lexeme_count, (select sum(length(m.tsv)) from memctx.messages m "
                               "where m.conversation_id = c.id) as stored from memctx.conversations c where c.id = %s",
                               (convs[1],)).fetchone()
    assert counted["lexeme_count"] == counted["stored"] > 0
    for terms in (["kayak"], ["jazz", "curry"], ["marathon", "pottery", "sunset", "nothingmatches"]):
        for since in (None, datetime(2000, 1, 1, tzinfo=timezone.utc)):
            lists = {}
            for plan in ("exact", "bounded"):
                params = {**_params(user, convs[1], _query(rng, centers), opts, terms, scope_size=600), "since": since}
                with app.pool.connection() as conn:
                    rows = conn.execute(SEARCH_QUERIES[("search_conversation", plan)], params, prepare=False).fetchall()
                lists[plan] = _ranked(rows, "lexical_rank")
            assert len(lists["exact"]) == 60
            assert lists["bounded"] == lists["exact"], (terms, since)


def test_a_common_term_counts_only_in_the_turns_a_rarer_term_matched(app, loaded):
    """Past k_match matches a term is common: the bounded list reads it no further, scores it only
    in turns a rarer query term matched (df k_match + 1) and, for a query of common terms alone,
    has no full-text list; checked against the same BM25 computed here from every turn, for one
    rare and one common term and for two of each."""
    user, convs, centers, rng = loaded
    conv = convs[0]
    with app.pool.connection() as conn:
        stats = conn.execute("select message_count as n, greatest(lexeme_count::float8 / message_count, 1) as avglen "
                             "from memctx.conversations where id = %s", (conv,)).fetchone()
        dfs = {w: conn.execute("select count(*) as n from memctx.messages where conversation_id = %s "
                               "and tsv @@ to_tsquery('english', %s)", (conv, w)).fetchone()["n"] for w in WORDS}
        k_match = sorted(dfs.values())[len(dfs) // 2]
        by_df = sorted(dfs, key=dfs.get)
        rares, commons = by_df[:2], by_df[-2:]
        assert max(dfs[w] for w in rares) <= k_match < min(dfs[w] for w in commons)
        turns = conn.execute(
            "select m.id, m.seq, m.lexemes as len, "
            + ", ".join(f"m.tsv @@ to_tsquery('english', %s) as has_{i}" for i in range(4))
            + " from memctx.messages m where m.conversation_id = %s order by m.seq",
            (*rares, *commons, conv)).fetchall()
    opts = SearchOptions(k_dense=1, k_lexical=60, smooth=1.0, k_match=k_match)
    n, avglen = stats["n"], stats["avglen"]

    def weight(df, length):
        return np.log(1 + (n - df + 0.5) / (df + 0.5)) * 2.2 / (1 + 1.2 * (0.25 + 0.75 * length / avglen))

    def expected(rare, common):
        own = {}
        for t in turns:
            found = [i for i, w in enumerate(rares) if w in rare and t[f"has_{i}"]]
            own[t["seq"]] = (sum(weight(dfs[rares[i]], t["len"]) for i in found)
                             + sum(weight(k_match + 1, t["len"]) for i, w in enumerate(commons, 2)
                                   if w in common and t[f"has_{i}"])) if found else 0.0
        smoothed = {seq: own[seq] + opts.smooth * (own.get(seq - 1, 0) + own.get(seq + 1, 0)) / 2 for seq in own}
        ids = {t["seq"]: t["id"] for t in turns}
        return [ids[seq] for seq in sorted((s for s in smoothed if smoothed[s] > 0),
                                           key=lambda s: (-round(smoothed[s], 9), -s))[:60]]

    def bounded(terms):
        params = _params(user, conv, _query(rng, centers), opts, terms, scope_size=n)
        with app.pool.connection() as conn:
            rows = conn.execute(SEARCH_QUERIES[("search_conversation", "bounded")], params, prepare=False).fetchall()
        return _ranked(rows, "lexical_rank")

    for rare, common in ((rares[:1], commons[-1:]), (rares, commons)):
        want = expected(rare, common)
        assert len(want) == 60 and bounded([*rare, *common]) == want, (rare, common)
    has_common = [f"has_{i}" for i in (2, 3)]
    has_rare = [f"has_{i}" for i in (0, 1)]
    assert any(any(t[c] for c in has_common) and not any(t[r] for r in has_rare) for t in turns)  # turns the
    assert bounded(commons) == []  # common terms alone matched rank on nothing: a query of them has no list


def test_caller_search_past_the_exact_scan_sees_only_its_rows(app, loaded):
    """As role `authenticated` (row-level security), the index plan finds what the owner's pool finds."""
    user, convs, centers, rng = loaded
    opts = SearchOptions(k_dense=40, k_pool=40, k_lexical=40, threshold=-1.0, exact_limit=100, smooth=1.0, k_codes=0)
    assert (choose_plan(600, 3600, opts), choose_plan(1800, 3600, opts, user_wide=True)) == ("bounded", "index")
    for conv in (convs[2], None):
        vec = _query(rng, centers)
        owner = MemorySearch(app.pool, app.embedder, opts).search(user, "jazz kayak", conv, limit=30, query_vec=vec)
        caller = MemorySearch(app.for_user(user).pool, app.embedder, opts).search(user, "jazz kayak", conv, limit=30,
                                                                                  query_vec=vec)
        assert len(caller) == 30 and [m.id for m in caller] == [m.id for m in owner]
        stranger = MemorySearch(app.for_user(uuid.uuid4()).pool, app.embedder, opts)
        assert stranger.search(user, "jazz kayak", conv, limit=30, query_vec=vec) == []


def test_every_plan_is_composed():
    assert set(SEARCH_QUERIES) == {(n, p) for n in ("search_conversation", "search_user") for p in PLANS}
    assert all("{" not in q for q in SEARCH_QUERIES.values())
