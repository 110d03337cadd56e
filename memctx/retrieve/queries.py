"""The memory-search queries, composed once from the named blocks of `memctx/sql/retrieve.sql`.

Owns: filling the templates `search_conversation` and `search_user`, for each plan of `PLANS`,
and `search_user_summaries`,
with the blocks they share (the scope of `SCOPES`, the long messages' passages of `PASSAGES`,
the dense and full-text blocks of the plan,
`search_hits`, `search_message_rows`: the scope and its time range, the relevance lists, the
hits and their neighbours, the rows returned) and with the per-signal SQL generated from
`SIGNALS` (each candidate list's rows, the hits' rank columns), with a time range or without one
(`UNRANGED`). The result is constant SQL strings, built at import:
one round trip per statement, EXPLAIN-able as printed. Runs nothing; `memctx.retrieve.search`
chooses the plan.
"""

from __future__ import annotations

from typing import Sequence

from psycopg import sql

from memctx.retrieve.signals import SIGNALS, Signal
from memctx.sql import QUERIES

SEARCHES = ("search_conversation", "search_user")
# Each search's scope block, written for a generic plan (see `memctx.retrieve.search.MemorySearch.fetch`).
SCOPES = {"search_conversation": "search_scope_conversation", "search_user": "search_scope"}
# A plan: the blocks that produce the dense list (its turns, then their ranking; in order) and the
# full-text list. The exact plans rank every turn of the scope, the others a pool and its neighbours.
PLANS = {
    "exact": (("search_dense_exact", "search_dense_rank_scope"), "search_lexical_exact"),  # every turn of the scope
    # exact dense, full text from the matches
    "bounded": (("search_dense_exact", "search_dense_rank_scope"), "search_lexical_bounded"),
    # dense from HNSW, rescored
    "index": (("search_dense_index", "search_dense_pool_turns", "search_dense_rank"), "search_lexical_bounded"),
    # dense from the nearest sign-bit codes (migration 0023), rescored
    "quantized": (("search_dense_quantized", "search_dense_pool_turns", "search_dense_rank"), "search_lexical_bounded"),
}
# Each plan's block of the long messages' best passages (`passages`).
PASSAGES = {"exact": "search_passages_exact", "bounded": "search_passages_exact", "index": "search_passages_index",
            "quantized": "search_passages_index"}


def conversation_filter(name: str, alias: str, column: str = "conversation_id") -> sql.SQL:
    """How search `name` narrows a side table's rows (`alias`: the passages', message_terms',
    message_codes', by their `column`; the conversations' by their id) to its scope: one
    conversation's, or all of the user's (nothing to add). Not `%(conversation_id)s is null or
    …`: a generic plan tests that on every row, and cannot look the conversation up by it."""
    if name == "search_conversation":
        return sql.SQL(f"and {alias}.{column} = %(conversation_id)s::uuid")
    return sql.SQL("")


def time_range_filter(ranged: bool, alias: str) -> sql.SQL:
    """How a search with a time range narrows a table's rows (`alias`) to it: created in [since,
    until), either bound null for none. A search without one (`ranged` false, as most are) tests
    nothing: a generic plan keeps `%(since)s is null or …` as a filter that it evaluates on every
    row, and a custom plan, which folds it away, costs its planning on every search."""
    if not ranged:
        return sql.SQL("")
    return sql.SQL(f"and (%(since)s::timestamptz is null or {alias}.created_at >= %(since)s::timestamptz) "
                   f"and (%(until)s::timestamptz is null or {alias}.created_at < %(until)s::timestamptz)")


def _filters(name: str, ranged: bool) -> dict[str, sql.Composable]:
    """The scope filters of every block of search `name`, with a time range or without one."""
    return {"passage_conversation": conversation_filter(name, "p"), "codes_conversation": conversation_filter(name, "c"),
            "terms_conversation": conversation_filter(name, "mt"),
            "stats_conversation": conversation_filter(name, "c", "id"),
            **{f"in_range_{alias}": time_range_filter(ranged, alias) for alias in ("m", "p", "c", "mt")},
            # where the full-text list's scope size and mean length come from: the conversations'
            # counters without a time range, a sample of the range's turns with one
            "counters": sql.SQL("%(since)s::timestamptz is null and %(until)s::timestamptz is null" if ranged else "true"),
            "sample": sql.SQL("%(since)s::timestamptz is not null or %(until)s::timestamptz is not null"
                              if ranged else "false")}


def _join(parts, sep: str = ",\n         ") -> sql.Composed:
    return sql.SQL(sep).join(list(parts))


def _block(queries, name: str) -> sql.SQL:
    """A shared block without its leading comment (which documents it in the .sql file)."""
    lines = queries[name].splitlines()
    while lines and lines[0].lstrip().startswith("--"):
        lines.pop(0)
    return sql.SQL("\n".join(lines))


def signal_sql(signals: Sequence[Signal]) -> dict[str, sql.Composable]:
    """The placeholders' SQL generated from the signal list."""
    candidates = _join((sql.SQL("select {} as signal, id, conversation_id, seq, rank from {}").format(
                            sql.Literal(s.name), sql.Identifier(s.cte))
                        for s in signals), "\n          union all ")
    ranks = _join(sql.SQL("min(c.rank) filter (where c.signal = {}) as {}").format(
        sql.Literal(s.name), sql.Identifier(s.rank_column)) for s in signals)
    return {
        "candidates": candidates,
        "ranks": ranks,
        "hit_ranks": _join((sql.Identifier("hits", s.rank_column) for s in signals), ", "),
        "summary_ranks": _join((sql.SQL("{} as {}").format(
            sql.Identifier("sr", s.rank_column) if s.relevance else sql.SQL("null::bigint"),
            sql.Identifier(s.rank_column)) for s in signals), ", "),
    }


def compose(name: str, signals: Sequence[Signal] = SIGNALS, queries=QUERIES, plan: str = "exact",
            part: str = "all", ranged: bool = True) -> str:
    """The SQL text of search query `name` for `signals` under `plan` (a key of PLANS): all of
    it, or one of the `PARTS` of a split search (the other part's list empty; `lexical_rows`: the
    full-text part with its list given, `search_lexical_given`); for a search with a time range
    (`ranged`) or without one."""
    generated = signal_sql(signals)
    filters = _filters(name, ranged)
    hits = _block(queries, "search_hits").format(ranks=generated["ranks"], candidates=generated["candidates"])
    rows = _block(queries, "search_message_rows").format(hit_ranks=generated["hit_ranks"])
    dense = _join([_block(queries, b).format(**filters) for b in PLANS[plan][0]], ",\n")
    lexical = _lexical_blocks(name, plan, queries, filters)
    return sql.SQL(queries[name]).format(
        scope=_block(queries, SCOPES[name]).format(**filters), passages=_block(queries, PASSAGES[plan]).format(**filters),
        dense=_block(queries, "search_dense_none") if part in ("lexical", "lexical_rows") else dense,
        lexical=(_block(queries, "search_lexical_none") if part == "dense" else
                 _block(queries, "search_lexical_given") if part == "lexical_rows" else lexical),
        hits=hits, message_rows=rows).as_string()


# The common terms a full-text list takes as known (`search_lexical_bounded`): none, but in the
# list alone (`search_lexical_list`), whose caller remembers them per scope.
NO_KNOWN_COMMON = sql.SQL("array[]::text[]")
KNOWN_COMMON = sql.SQL("%(known_common)s::text[]")


def _lexical_blocks(name: str, plan: str, queries, filters: dict[str, sql.Composable],
                    known_common: sql.Composable = NO_KNOWN_COMMON) -> sql.Composed:
    """The blocks of `plan`'s full-text list: the query's terms, then the list."""
    return _join((_block(queries, "search_lexical_terms"),
                  _block(queries, PLANS[plan][1]).format(**filters, known_common=known_common,
                                                         bm25_score=_block(queries, "search_bm25_score"))), ", ")


def compose_lexical_list(name: str, plan: str, queries=QUERIES, ranged: bool = True) -> str:
    """The SQL text of `search_lexical_list` for search `name` under `plan`: its full-text list
    alone, without the query's vector, skipping the common terms it is given (`known_common`)."""
    filters = _filters(name, ranged)
    return sql.SQL(queries["search_lexical_list"]).format(
        scope=_block(queries, SCOPES[name]).format(**filters),
        lexical=_lexical_blocks(name, plan, queries, filters, KNOWN_COMMON)).as_string()


def compose_summaries(signals: Sequence[Signal] = SIGNALS, queries=QUERIES, ranged: bool = True) -> str:
    """The SQL text of `search_user_summaries` (every plan's: summaries are few, and scanned)."""
    return sql.SQL(queries["search_user_summaries"]).format(
        scope=_block(queries, SCOPES["search_user"]).format(**_filters("search_user", ranged)),
        summary_ranks=signal_sql(signals)["summary_ranks"]).as_string()


SEARCH_QUERIES = {(name, plan): compose(name, plan=plan) for name in SEARCHES for plan in PLANS}
# The two statements of a split search (memctx.retrieve.search: scopes past the exact scan): the
# dense list with the recent turns, and the full-text list (run with k_recent 0), each with the
# rows of its own hits and their neighbours.
PARTS = ("dense", "lexical")
SEARCH_PARTS = {(name, plan, part): compose(name, plan=plan, part=part)
                for name in SEARCHES for plan in PLANS for part in (*PARTS, "lexical_rows")}
# The full-text part in two statements (memctx.retrieve.search): its list while the query is
# embedded, then the rows of its hits (`SEARCH_PARTS[(name, plan, "lexical_rows")]`). Only a list
# from the matches can stand alone (the exact list ranks every turn of the scope it reads).
LEXICAL_LISTS = {(name, plan): compose_lexical_list(name, plan) for name in SEARCHES for plan in PLANS
                 if PLANS[plan][1] == "search_lexical_bounded"}
SUMMARY_QUERY = compose_summaries()


# Every search statement's text without a time range, by its text with one (search.py,
# `_text`): the statements of a search without one, as most are (`time_range_filter`).
UNRANGED = {**{SEARCH_QUERIES[(name, plan)]: compose(name, plan=plan, ranged=False) for name, plan in SEARCH_QUERIES},
            **{SEARCH_PARTS[key]: compose(key[0], plan=key[1], part=key[2], ranged=False) for key in SEARCH_PARTS},
            **{LEXICAL_LISTS[key]: compose_lexical_list(*key, ranged=False) for key in LEXICAL_LISTS},
            SUMMARY_QUERY: compose_summaries(ranged=False)}
