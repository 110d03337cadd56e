"""A search without a time range runs its statements without their time-range tests
(`memctx.retrieve.queries.time_range_filter`): the same rows as with the tests and null bounds, under a
generic plan or a custom one; a search with a time range still runs the tests."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memctx.retrieve import SearchOptions
from memctx.retrieve.lexical import analyze
from memctx.retrieve.queries import LEXICAL_LISTS, SEARCH_PARTS, SEARCH_QUERIES, SUMMARY_QUERY, UNRANGED
from memctx.retrieve.search import _search_settings, _text, hnsw_settings, plan_of, pool_size
from test_retrieve_quantized import _query, loaded  # noqa: F401  (the fixture)

OPTS = SearchOptions(k_dense=40, k_pool=120, k_codes=120, k_lexical=40, k_recent=5,
                     threshold=-1.0, exact_limit=100, smooth=1.0)


def _params(user, conversation, analysis, vec, mode):
    return {"user_id": user, "conversation_id": conversation, "query_vec": vec, "tsquery": analysis.tsquery,
            "terms": list(analysis.terms), "since": None, "until": None, "k_dense": OPTS.k_dense,
            "k_lexical": OPTS.k_lexical, "k_recent": OPTS.k_recent, "smooth": OPTS.smooth, "window": OPTS.neighbours, "pair": OPTS.pair,
            "k_pool": pool_size(OPTS), "k_match": OPTS.k_match, "k_codes": max(OPTS.k_codes, pool_size(OPTS)),
            "ef_search": pool_size(OPTS), "max_scan_tuples": OPTS.max_scan_tuples, "parallel_workers": 0,
            "scope_size": 1800 if conversation is None else 600, "plan_cache_mode": mode,
            "known_common": [], "lexical_ids": []}


def _rows(app, query, params, plan):
    with app.pool.connection() as conn, conn.transaction():
        _search_settings(conn, hnsw_settings(plan, True), params)
        return [tuple(r.values()) for r in conn.execute(query, params, prepare=True).fetchall()]


def test_no_statement_keeps_a_time_range_test():
    statements = (*SEARCH_QUERIES.values(), *SEARCH_PARTS.values(), *LEXICAL_LISTS.values(), SUMMARY_QUERY)
    assert set(UNRANGED) == set(statements)
    for query in statements:
        assert "%(since)s" in query and "%(until)s" in query
        bare = UNRANGED[query]
        assert "%(since)s" not in bare and "%(until)s" not in bare and len(bare) < len(query)


@pytest.mark.parametrize("mode", ["force_generic_plan", "force_custom_plan"])
def test_each_statement_without_its_tests_returns_the_same_rows(app, loaded, mode):  # noqa: F811
    user, convs, centers, rng = loaded
    compared = 0
    for conversation in (None, convs[0]):
        name = "search_user" if conversation is None else "search_conversation"
        for words in ("jazz kayak", "violin"):
            analysis = analyze(words, ())
            params = _params(user, conversation, analysis, _query(rng, centers), mode)
            for plan in ("exact", "bounded", "index", "quantized"):
                if plan == "quantized" and conversation is not None:
                    continue  # user-wide only
                queries = [SEARCH_QUERIES[(name, plan)], *(SEARCH_PARTS[(name, plan, p)] for p in ("dense", "lexical")),
                           *([LEXICAL_LISTS[(name, plan)]] if plan != "exact" else [])]
                if conversation is None:
                    queries.append(SUMMARY_QUERY)
                for query in queries:
                    ranged = _rows(app, query, params, plan)
                    # the fixture has no summaries, and no turn says "violin"
                    assert bool(ranged) == (query != SUMMARY_QUERY and (words != "violin" or "%(k_recent)s" in query))
                    assert _rows(app, UNRANGED[query], params, plan) == ranged, (name, plan)
                    compared += 1
    assert compared == 2 * (4 * 5 - 1) + 2 * (3 * 4 - 1)  # the exact plans have no list alone


def test_a_search_with_a_time_range_runs_the_tests_and_only_it_plans_the_quantized_pool_per_search():
    query = SEARCH_PARTS[("search_user", "quantized", "dense")]
    since = datetime.now(timezone.utc) - timedelta(days=1)
    assert _text(query, {"since": None, "until": None}) == UNRANGED[query]
    assert _text(query, {"since": since, "until": None}) == query
    assert _text(query, {"since": None, "until": since}) == query
    inputs = {"table_rows": 1_000_000, "scope_tsv_index": True, "own_index": False, "iterative_scan": True,
              "scope_size": 5_000}
    assert plan_of(inputs, SearchOptions(), None, None).plan == "quantized"
    assert plan_of(inputs, SearchOptions(), None, None).params["plan_cache_mode"] == "force_generic_plan"
    assert plan_of(inputs, SearchOptions(), (since, None), None).params["plan_cache_mode"] == "force_custom_plan"
