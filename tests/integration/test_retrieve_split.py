"""A search past the exact scan runs as two statements side by side (the dense list with the
recent turns, and the full text), on two connections when the pool has them, and merges their
rows into what the whole statement returns."""

from __future__ import annotations

import threading
import uuid

from datetime import datetime, timezone

import pytest

from memctx.app import open_app
from memctx.retrieve import MemorySearch, SearchOptions
from memctx.retrieve.lexical import analyze
from memctx.retrieve.queries import LEXICAL_LISTS, SEARCH_PARTS, SEARCH_QUERIES
from memctx.retrieve.search import _search_settings, choose_plan, hnsw_settings, merge_parts, pool_size
from test_retrieve_quantized import _query, loaded  # noqa: F401  (the fixture)
from test_retrieve_search import _store, _summary_of_the_first_turns

OPTS = SearchOptions(k_dense=40, k_pool=120, k_codes=120, k_lexical=40, k_recent=5,
                     threshold=-1.0, exact_limit=100, smooth=1.0)


def _whole(app, user, conversation, analysis, vec, plan):
    """The rows of the whole statement, as one search ran them before the split."""
    params = {"user_id": user, "conversation_id": conversation, "query_vec": vec, "tsquery": analysis.tsquery,
              "terms": list(analysis.terms), "since": None, "until": None, "k_dense": OPTS.k_dense,
              "k_lexical": OPTS.k_lexical, "k_recent": OPTS.k_recent, "smooth": OPTS.smooth, "window": OPTS.neighbours, "pair": OPTS.pair,
              "k_pool": pool_size(OPTS), "k_match": OPTS.k_match, "k_codes": max(OPTS.k_codes, pool_size(OPTS)),
              "ef_search": pool_size(OPTS), "max_scan_tuples": OPTS.max_scan_tuples, "parallel_workers": 0,
              "scope_size": 1800 if conversation is None else 600, "plan_cache_mode": "force_custom_plan"}
    name = "search_user" if conversation is None else "search_conversation"
    with app.pool.connection() as conn, conn.transaction():
        _search_settings(conn, hnsw_settings(plan, True), params)
        return conn.execute(SEARCH_QUERIES[(name, plan)], params, prepare=False).fetchall()


def _key(rows):
    return [(r["id"], r["dense_rank"], r["lexical_rank"], r["recent_rank"], r["is_hit"], r["similarity"])
            for r in rows if r["kind"] == "message"]


@pytest.mark.parametrize("pool_max_size", [4, 1])  # 1: no second connection, the parts one after the other
def test_a_split_search_returns_the_whole_statements_rows(app, settings, embedder, loaded, pool_max_size):  # noqa: F811
    user, convs, centers, rng = loaded
    with open_app(settings.model_copy(update={"pool_min_size": 1, "pool_max_size": pool_max_size}),
                  embedder=embedder) as small:
        search = MemorySearch(small.pool, small.embedder, OPTS)
        compared = 0
        for conversation in (None, convs[0]):
            size = 1800 if conversation is None else 600
            plan = choose_plan(size, 3600, OPTS, matches_indexed=True, user_wide=conversation is None)
            assert plan == ("quantized" if conversation is None else "bounded")
            for words in ("jazz kayak", "kayak", "violin jazz tofu", "zzzz"):
                analysis = analyze(words, ())
                vec = _query(rng, centers)
                got = search.fetch(user, analysis, vec, conversation, None, OPTS)
                whole = _whole(small, user, conversation, analysis, vec, plan)
                assert _key(got) == _key(whole)
                assert any(r["lexical_rank"] for r in whole) == (words != "zzzz")
                compared += 1
        assert compared == 8


def test_each_part_ranks_its_own_lists():
    for (name, plan, part), text in SEARCH_PARTS.items():
        whole = SEARCH_QUERIES[(name, plan)]
        if part == "lexical_rows":  # the rows of a full-text list ranked before (`LEXICAL_LISTS`)
            assert "bm25" not in text and "dense_turns" not in text and "unnest(%(lexical_ids)b" in text
            if plan == "exact":  # no list of its own: the exact full text is one statement
                assert (name, plan) not in LEXICAL_LISTS
                continue
            list_text = LEXICAL_LISTS[(name, plan)]
            assert "bm25" in list_text and "dense_turns" not in list_text and "query_vec" not in list_text
            continue
        own, other = ("dense_turns", "bm25") if part == "dense" else ("bm25", "dense_turns")
        assert own in text and other not in text and other in whole
    assert "dense as (\n  select null::uuid" in SEARCH_PARTS[("search_user", "quantized", "lexical")]


def test_merge_parts_keeps_each_message_once_with_both_parts_ranks():
    conv = uuid.UUID(int=1)

    def row(seq, dense=None, lexical=None, recent=None):
        return {"id": uuid.UUID(int=100 + seq), "conversation_id": conv, "seq": seq, "dense_rank": dense,
                "lexical_rank": lexical, "recent_rank": recent, "is_hit": any((dense, lexical, recent))}

    first = [row(1), row(2, dense=1), row(3), row(9, recent=1)]  # a dense hit and its neighbours
    second = [row(2), row(3, lexical=1), row(4)]  # a full-text hit next to it
    merged = merge_parts(first, second)
    assert [(r["seq"], r["dense_rank"], r["lexical_rank"], r["recent_rank"], r["is_hit"]) for r in merged] == [
        (1, None, None, None, False), (2, 1, None, None, True), (3, None, 1, None, True),
        (4, None, None, None, False), (9, None, None, 1, True)]


def test_concurrent_split_searches_share_a_small_pool(app, settings, embedder, loaded):  # noqa: F811
    """Eight threads on a pool of three: every search gets its rows, whether its full-text part
    found a connection of its own or ran after the other part."""
    user, convs, centers, rng = loaded
    vecs = [_query(rng, centers) for _ in range(8)]
    with open_app(settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 3}), embedder=embedder) as small:
        search = MemorySearch(small.pool, small.embedder, OPTS)
        expected = [[m.id for m in search.search(user, "jazz kayak", None, limit=20, query_vec=v)] for v in vecs]
        got: dict[int, list] = {}
        errors: list[BaseException] = []

        def run(i):
            try:
                for _ in range(3):
                    got[i] = [m.id for m in search.search(user, "jazz kayak", None, limit=20, query_vec=vecs[i])]
            except BaseException as exc:  # noqa: BLE001 (reported below)
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors and [got[i] for i in range(8)] == expected
        assert all(len(ids) == 20 for ids in expected)


def test_a_split_user_wide_search_keeps_its_summaries(app):
    """Past the exact scan a user-wide search reads its summaries on its own connection after the
    dense part, while the full text runs beside: the memories, summaries included, are those of
    the same search within the exact scan (one statement, the summaries beside it)."""
    user = uuid.uuid4()
    conv = _store(app, user)
    _summary_of_the_first_turns(app, user, conv)
    found = {}
    for name, opts in (("split", SearchOptions(limit=10, exact_limit=2)), ("whole", SearchOptions(limit=10))):
        engine = MemorySearch(app.pool, app.embedder, opts)
        for _ in range(2):  # the second search of a scope runs on the plan inputs the first read
            found.setdefault(name, []).append([m.as_json() for m in engine.search(user, "pottery classes Tuesday")])
    assert found["split"][0] == found["split"][1] == found["whole"][0] == found["whole"][1]
    assert any(m["kind"] == "summary" for m in found["split"][0])
    assert any(m["kind"] == "message" for m in found["split"][0])


@pytest.mark.parametrize("slower", ["full text", "dense"])
def test_the_part_that_ends_first_reads_the_summaries(app, monkeypatch, slower):
    """A split user-wide search reads its summaries on the connection of whichever part ends
    first, and finds what the whole statement finds either way."""
    import memctx.retrieve.search as search_module

    user = uuid.uuid4()
    conv = _store(app, user)
    _summary_of_the_first_turns(app, user, conv)
    whole = [m.as_json() for m in MemorySearch(app.pool, app.embedder, SearchOptions(limit=10)).search(
        user, "pottery classes Tuesday")]
    readers = []
    summaries, part, remember = search_module._summaries, search_module._part, search_module._remember

    def read(conn, params):
        readers.append(threading.current_thread().name)
        return summaries(conn, params)

    def slow(run):
        def slowed(*args):
            threading.Event().wait(0.3)
            return run(*args)
        return slowed

    monkeypatch.setattr(search_module, "_summaries", read)
    if slower == "full text":
        monkeypatch.setattr(search_module, "_part", slow(part))
    else:  # the dense part's thread, after its statement and before it looks for the summaries
        monkeypatch.setattr(search_module, "_remember", slow(remember))
    engine = MemorySearch(app.pool, app.embedder, SearchOptions(limit=10, exact_limit=2))
    for _ in range(2):
        readers.clear()
        assert [m.as_json() for m in engine.search(user, "pottery classes Tuesday")] == whole
        assert len(readers) == 1 and readers[0].startswith("memctx-beside") == (slower == "dense"), readers
    assert any(m["kind"] == "summary" for m in whole)


def test_the_full_text_list_starts_before_the_query_vector(app, monkeypatch, loaded):  # noqa: F811
    """Where the scope's known plan inputs split the search with the index plan (its full text the
    longer part), the full-text list runs while the query's vector is made, and its hits' rows
    after: the rows are those of the full text in one statement, with the vector at hand."""
    import time
    from dataclasses import replace

    import memctx.retrieve.search as search_module
    from memctx.retrieve.search import plan_of

    user, convs, centers, rng = loaded
    opts = replace(OPTS, k_codes=0, k_pool=60)  # no quantized pool, a pool the index serves: the index plan
    search = MemorySearch(app.pool, app.embedder, opts)
    started = []
    lexical_part = search_module._lexical_part

    def spy(conn, name, plan, hnsw, params, vector, claim, *rest):
        started.append(vector.done())
        return lexical_part(conn, name, plan, hnsw, params, vector, claim, *rest)

    monkeypatch.setattr(search_module, "_lexical_part", spy)
    for words in ("jazz kayak", "violin jazz tofu", "zzzz"):
        analysis, vec = analyze(words, ()), _query(rng, centers)
        at_hand = search.fetch(user, analysis, vec, None, None, opts)  # and the plan inputs, known from now on
        chosen = plan_of(search._plan_inputs[(user, None)], opts, None, None)
        assert chosen.lexical_first and (chosen.plan, chosen.hnsw) == ("index", "search_hnsw_settings")
        started.clear()
        got = search.fetch(user, analysis, lambda vec=vec: time.sleep(0.2) or vec, None, None, opts)
        assert started == [False]  # the list ran before the vector was made
        assert _key(got) == _key(at_hand) and [r["passage_id"] for r in got] == [r["passage_id"] for r in at_hand]
        assert any(r["lexical_rank"] for r in got) == (words != "zzzz")


def test_the_full_text_list_reads_a_scopes_common_terms_once(app, monkeypatch, loaded):  # noqa: F811
    """A term matching more than k_match turns of the scope is common: the first list alone that
    meets it tells its caller, and the scope's next lists do not read its matches again, with the
    rows of the statement that reads every term. A scope that lost messages forgets them."""
    import time
    from dataclasses import replace

    import memctx.retrieve.search as search_module
    from memctx.retrieve.search import CommonTerms
    from test_retrieve_scale import WORDS

    user, convs, centers, rng = loaded
    with app.pool.connection() as conn:
        counts = sorted((conn.execute("select count(*) as n from memctx.message_terms where user_id = %s "
                                      "and tsv @@ to_tsquery('english', %s)", (user, w)).fetchone()["n"], w)
                        for w in WORDS)
    (rare_n, rare), (common_n, common) = counts[0], counts[-1]
    assert rare_n < common_n
    # the index plan (the list alone runs before the vector), one word rare and one common
    opts = replace(OPTS, k_codes=0, k_pool=60, k_match=(rare_n + common_n) // 2)
    search = MemorySearch(app.pool, app.embedder, opts)
    known = []
    statement = search_module._statement

    def spy(conn, hnsw, query, params):
        if "known_common" in params:
            known.append(params["known_common"])
        return statement(conn, hnsw, query, params)

    monkeypatch.setattr(search_module, "_statement", spy)
    analysis, vec = analyze(f"{rare} {common}", ()), _query(rng, centers)
    at_hand = search.fetch(user, analysis, vec, None, None, opts)  # every term read; the plan inputs known
    for _ in range(2):
        got = search.fetch(user, analysis, lambda: time.sleep(0.2) or vec, None, None, opts)
        assert _key(got) == _key(at_hand) and any(r["lexical_rank"] for r in got)
    assert known == [[], [f"'{common}'"]]  # read the first time, known the second

    terms = CommonTerms()
    terms.learn((user, None), 1800, 500, ["'jazz'"])
    terms.learn((user, None), 1850, 500, ["'kayak'"])
    assert terms.known((user, None), 1850, 500) == ["'jazz'", "'kayak'"] == terms.scoped((user, None), 1851, 500).known()
    assert terms.known((user, convs[0]), 1850, 500) == []  # another scope
    assert terms.known((user, None), 1849, 500) == []  # messages deleted since: they may be rare now
    assert terms.known((user, None), 1850, 2000) == []  # common at 500 matches, not at 2,000
    assert terms.scoped(None, 1850, 500) is None  # a time range's list: its own terms


def test_the_full_text_part_runs_its_generic_plan(app, settings, embedder, loaded):  # noqa: F811
    """A split search's full-text statement runs on its generic plan (no planning per search), and
    so does the quantized dense part without a time range (its statement then tests none); with a
    time range, the dense part runs on a plan made for its values. The server's counts of each
    prepared statement's plans say which ran (one connection: both parts run on it, one after
    the other)."""
    user, convs, centers, rng = loaded
    ranges = [None] * 3 + [(datetime(2000, 1, 1, tzinfo=timezone.utc), None)] * 2
    with open_app(settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 1}), embedder=embedder) as small:
        search = MemorySearch(small.pool, small.embedder, OPTS)
        for words, time_range in zip(("jazz kayak", "violin jazz tofu", "kayak", "jazz", "tofu kayak"), ranges):
            search.fetch(user, analyze(words, ()), _query(rng, centers), None, time_range, OPTS)
        with small.pool.connection() as conn:
            plans = conn.execute("select statement, generic_plans, custom_plans from pg_prepared_statements").fetchall()

    def counts(own, other, ranged):
        return [(p["generic_plans"], p["custom_plans"]) for p in plans if own in p["statement"]
                and other not in p["statement"] and ("created_at >=" in p["statement"]) == ranged]

    assert counts("bm25", "dense_turns", False) == [(3, 0)] and counts("bm25", "dense_turns", True) == [(2, 0)]
    assert counts("dense_turns", "bm25", False) == [(3, 0)] and counts("dense_turns", "bm25", True) == [(0, 2)]
