"""Memory search: hybrid retrieval over a conversation or all of a user's memory.

Owns: `MemorySearch.search` — embed the query, choose the plan from the scope's size (exact
scans, or past them: HNSW, a heavy user's own HNSW index or migration 0023's sign-bit codes, and
GIN-selected matches; `choose_plan`), fetch dense / full-text / recency candidates and their
neighbours in one SQL round trip (`search_conversation` or `search_user`; past the exact scan
its two parts side by side, `merge_parts`; beside a user-wide search its summaries'
`search_user_summaries`), fuse them
by weighted RRF, apply the similarity threshold, attach each hit's paired turn (and optional
temporal neighbours), rerank, and return `Memory` objects. It does not budget tokens or format
context (`memctx.assemble` does).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta, timezone
from functools import partial
from typing import Any, Callable, Iterator, Mapping, Sequence
from uuid import UUID

import numpy as np
from psycopg import Connection
from psycopg_pool import ConnectionPool, PoolTimeout

from memctx.embed import Embedder, embed_query
from memctx.frozen import frozen_new
from memctx.retrieve.fusion import FusionWeights, rrf
from memctx.retrieve.lexical import QueryAnalysis, analyze
from memctx.retrieve.queries import LEXICAL_LISTS, SEARCH_PARTS, SEARCH_QUERIES, SUMMARY_QUERY, UNRANGED
from memctx.retrieve.rerank import NoRerank, Reranker
from memctx.retrieve.signals import SIGNALS, best_relevance_rank, ranks_of
from memctx.retrieve.types import Fragment, Memory, Provenance
from memctx.sql import QUERIES

TimeRange = tuple[datetime | None, datetime | None]
Scope = tuple[UUID, UUID | None]  # (user, conversation; None: all of the user's)
NAMED_RANGES = ("today", "week", "month", "all")
_SPANS = {"week": timedelta(days=7), "month": timedelta(days=30)}


def named_range(name: str, now: datetime | None = None) -> TimeRange | None:
    """The time range a person means by `name` (one of NAMED_RANGES), in UTC; None for "all"."""
    now = now or datetime.now(timezone.utc)
    if name == "all":
        return None
    if name == "today":
        return datetime.combine(now.date(), time(), timezone.utc), None
    return now - _SPANS[name], None


@dataclass(frozen=True)
class SearchOptions:
    """Tunables of memory search; `from_settings` maps the MEMCTX_* settings onto them."""

    limit: int = 10
    threshold: float = 0.15  # cosine similarity floor for dense-only hits (calibrated for MiniLM)
    weights: FusionWeights = field(default_factory=FusionWeights)
    k_dense: int = 50
    k_lexical: int = 50
    k_recent: int = 10
    pair: bool = True
    # Pair only when the partner adds something: the hit asks a question (its answer follows), or
    # the partner is itself within this rank of a relevance list. None: always pair.
    pair_rank: int | None = 30
    neighbours: int = 0  # extra turns either side of a hit (temporal neighbours)
    speaker_boost: float = 0.0  # relative bonus when the hit's speaker is named in the query
    # A summary's fused score is scaled by this (user scope: summaries rank in lists of their
    # own, a few dozen long against thousands of turns, so at 1.0 the best summary ties the best
    # turn). At 1.0 summaries took the room of 61 / 73 / 41 gold turns at 1k / 2k / 4k tokens on
    # the LoCoMo dev split, 0.25 gives them back and keeps summaries where turns score low.
    summary_weight: float = 0.25
    smooth: float = 0.0  # weight of the neighbours' mean score in both relevance lists
    # Past the exact scan (docs/RETRIEVAL.md): a scope of more than exact_limit messages reads its
    # full-text list from the matches only (a term matching more than k_match turns is common and
    # counts only where a rarer one matched; k_match ≥ exact_limit keeps every scope within the
    # exact scan free of common terms), and its dense list from
    # HNSW (the k_pool nearest turns, at least k_dense, rescored exactly with their neighbours)
    # when that visits fewer tuples than the exact scan would read rows; hnsw.max_scan_tuples
    # bounds the index scan. A pool of 3 × 50 gave a smoothed dense recall@50 of 0.995 against
    # the exact scan in tests/integration/test_retrieve_scale.py, 2 × 50 0.93-0.97.
    exact_limit: int = 2000
    k_match: int = 2000
    k_pool: int = 300
    max_scan_tuples: int = 20000
    # A user-wide search past the exact scan takes its pool from the k_codes nearest sign-bit
    # codes (migration 0023), rescored exactly: it reads no other user's rows, so its cost follows
    # the user's size, not the table's. 0: never (the HNSW plan or the exact scan, as for one
    # conversation).
    k_codes: int = 1000
    # Parallel workers per scan in a search's transaction (None: the server's setting). Searches
    # are many and short and run side by side, so workers mostly add start-up and contention.
    parallel_workers: int | None = 0

    @classmethod
    def from_settings(cls, settings: Any) -> "SearchOptions":
        return cls(
            limit=settings.search_limit, threshold=settings.search_threshold,
            weights=FusionWeights.of(k=settings.search_rrf_k, **{s.name: getattr(settings, s.setting) for s in SIGNALS}),
            k_dense=settings.search_candidates, k_lexical=settings.search_candidates,
            k_recent=settings.search_recent_candidates, neighbours=settings.search_neighbours,
            speaker_boost=settings.search_speaker_boost, smooth=settings.search_dense_smoothing,
            pair_rank=settings.search_pair_rank, summary_weight=settings.search_summary_weight,
            parallel_workers=settings.search_parallel_workers, k_codes=settings.search_quantized_candidates)


class MemorySearch:
    """Hybrid memory search over one pool; safe to share between threads."""

    def __init__(self, pool: ConnectionPool, embedder: Embedder, options: SearchOptions | None = None,
                 reranker: Reranker | None = None) -> None:
        self.pool = pool
        self.embedder = embedder
        self.options = options or SearchOptions()
        self.reranker = reranker or NoRerank()
        self._speakers: OrderedDict[Scope, tuple[str, ...]] = OrderedDict()
        self._plan_inputs: OrderedDict[Scope, Mapping[str, int]] = OrderedDict()  # see `fetch`
        self.common_terms = CommonTerms()

    def search(self, user: UUID, query: str, conversation: UUID | None = None, time_range: TimeRange | None = None,
               limit: int | None = None, threshold: float | None = None, *,
               options: SearchOptions | None = None, query_vec: np.ndarray | Callable[[], np.ndarray] | None = None,
               now: datetime | None = None) -> list[Memory]:
        """The best `limit` memories for `query`, best first. `now`, when given, is the moment the
        query is asked: its relative dates ("last Saturday") are searched as the days they mean.
        `query_vec`: the query's vector, or what makes it when needed (shared with a caller)."""
        opts = options or self.options
        limit = opts.limit if limit is None else limit
        threshold = opts.threshold if threshold is None else threshold
        analysis = analyze(query, self.speakers(user, conversation), now.date() if now else None)
        # The query's vector when `fetch` needs it: a split search's full text starts before it.
        vec = partial(self.embed_query, analysis.dense_text) if query_vec is None else query_vec
        rows = self.fetch(user, analysis, vec, conversation, time_range, opts)
        # Without a reranker the best `limit` are the first built: the rest are never built.
        memories = build_memories(rows, analysis, opts, threshold,
                                  limit if isinstance(self.reranker, NoRerank) else None)
        return self.reranker.rerank(query, memories)[:limit]

    def embed_query(self, query: str) -> np.ndarray:
        return embed_query(self.embedder, query)

    def fetch(self, user: UUID, analysis: QueryAnalysis, vec: np.ndarray | Callable[[], np.ndarray],
              conversation: UUID | None, time_range: TimeRange | None, opts: SearchOptions) -> list[dict[str, Any]]:
        """The candidate rows of one round trip: hits and their neighbours, in order, then (all of
        a user's memory) the summaries of a statement run beside it. `vec`: the query's vector, or
        what makes it.

        The plan comes from the scope's size as the previous search of the same scope read it:
        `search_plan_inputs` runs in the search's round trip, after it, for the next search (the
        first search of a scope reads it before). Being one search behind can only pick a slower
        or a less exact plan once: a scope that just grew past `exact_limit` gets one more exact
        scan. A split search whose plan is known so (`Plan.lexical_first`) starts its full-text
        list before the query's vector is made, on a connection of its own.
        """
        since, until = time_range or (None, None)
        k_pool = pool_size(opts)
        params = {"user_id": user, "conversation_id": conversation, "query_vec": None, "tsquery": analysis.tsquery,
                  "terms": list(analysis.terms), "since": since, "until": until, "k_dense": opts.k_dense, "k_lexical": opts.k_lexical,
                  "k_recent": opts.k_recent, "smooth": opts.smooth, "window": opts.neighbours, "pair": opts.pair,
                  "k_pool": k_pool, "k_match": opts.k_match, "k_codes": max(opts.k_codes, k_pool), "ef_search": min(k_pool, 1000),
                  "max_scan_tuples": opts.max_scan_tuples, "parallel_workers": opts.parallel_workers}
        name = "search_conversation" if conversation else "search_user"
        # A user-wide search's summaries: their own statement, on another connection beside the
        # turns' statement when the pool has one free, else after it on this one. A split search
        # reads them after whichever part ends first, on its connection: never a third statement
        # at once (on two cores that only slowed the full text, the heavy user's longest part),
        # and not after the dense part when the full text ended long before (users of a few
        # thousand turns).
        vector: Future[np.ndarray] = Future()
        summaries_claim = threading.Lock() if conversation is None else None
        lexical = None
        inputs = self._plan_inputs.get((user, conversation))
        chosen = plan_of(inputs, opts, time_range, conversation) if inputs is not None else None
        if chosen is not None:
            params.update(chosen.params)
            if chosen.lexical_first and callable(vec):  # the full-text list now; its rows once the vector is made
                scope = (user, conversation) if time_range is None else None  # a time range's terms are its own
                common = self.common_terms.scoped(scope, chosen.scope_size, opts.k_match)
                lexical = _BESIDE.submit(self._beside, _lexical_part, name, chosen.plan, chosen.hnsw, dict(params),
                                         vector, summaries_claim, common)
        try:
            params["query_vec"] = vec() if callable(vec) else vec
        except BaseException as exc:
            vector.set_exception(exc)
            raise
        vector.set_result(params["query_vec"])
        with self.pool.connection() as conn:
            if chosen is None:
                inputs = conn.execute(QUERIES["search_plan_inputs"], params).fetchone()
                chosen = plan_of(inputs, opts, time_range, conversation)
                params.update(chosen.params)
            plan, hnsw, split = chosen.plan, chosen.hnsw, chosen.split
            # Past the exact scan, the full-text list runs beside the rest, on a second connection
            # when the pool has one free (else after it on this one): for a heavy user the two lists
            # are most of the statement, and run one after the other otherwise (docs/RETRIEVAL.md).
            if split and lexical is None:
                lexical = _BESIDE.submit(self._beside, _lexical_part, name, plan, hnsw, dict(params), vector,
                                         summaries_claim)
            beside = None if conversation or split else _BESIDE.submit(self._summaries_beside, dict(params))
            # One pipeline: the transaction, the search and the next plan inputs in one round trip.
            with _one_round_trip(conn):
                _search_settings(conn, hnsw, params)
                query = _text(SEARCH_PARTS[(name, plan, "dense")] if split else SEARCH_QUERIES[(name, plan)], params)
                rows = conn.execute(_for_user(query, user) if chosen.own else query, params, prepare=True)
                fresh = conn.execute(QUERIES["search_plan_inputs"], params)
            _remember(self._plan_inputs, (user, conversation), fresh.fetchone())
            rows = rows.fetchall()
            summaries = None
            if split and summaries_claim is not None and summaries_claim.acquire(blocking=False):
                summaries = _summaries(conn, params)
            if split:
                done = lexical.result()
                if done is None:  # no second connection: the full text after the rest, on this one
                    lexical_rows = _part(conn, name, plan, hnsw, params)
                else:
                    lexical_rows, summaries = done[0], summaries if summaries is not None else done[1]
                rows = merge_parts(rows, lexical_rows)
            if conversation is not None:
                return rows
            if beside is not None:
                summaries = beside.result()
            # the turns in order, then the summaries (fusion breaks ties by this order)
            return rows + (summaries if summaries is not None else _summaries(conn, params))

    def _summaries_beside(self, params: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The summaries of a user-wide search on a connection of its own (`_beside`)."""
        return self._beside(_summaries, params)

    def _beside(self, run: Any, *args: Any) -> Any | None:
        """`run(conn, *args)` on a connection of its own, or None when the pool has none free
        within BESIDE_WAIT_S (no search waits long for a second connection while holding its
        first; the caller then runs it after its own statement, on its connection)."""
        try:
            with self.pool.connection(BESIDE_WAIT_S) as conn:
                return run(conn, *args)
        except PoolTimeout:
            return None

    def speakers(self, user: UUID, conversation: UUID | None) -> tuple[str, ...]:
        """The speaker names of the conversation, or of all of the user's conversations, as their
        conversations keep them (migration 0027); cached per scope, as speakers rarely change."""
        known = self._speakers.get((user, conversation))
        if known is not None:
            return known
        with self.pool.connection() as conn:
            rows = conn.execute(QUERIES["conversation_speakers"],
                                {"user_id": user, "conversation_id": conversation}).fetchall()
        speakers = tuple(sorted(r["speaker"] for r in rows if r["speaker"]))
        _remember(self._speakers, (user, conversation), speakers)
        return speakers


CACHED_SCOPES = 1024

# The statements run beside a search's own: a user-wide search's summaries, and the full-text
# part of a search past the exact scan. Threads start on demand; a statement only runs on a
# connection free within BESIDE_WAIT_S, so the pool, not this cap, limits them.
_BESIDE = ThreadPoolExecutor(max_workers=64, thread_name_prefix="memctx-beside")
# How long a statement beside waits for a connection of its own before it runs after the turns'
# statement on theirs (the pool refuses a timeout of 0 even with connections idle).
BESIDE_WAIT_S = 0.002


def hnsw_settings(plan: str, iterative: bool) -> str | None:
    """The query of `plan`'s HNSW settings, None when it scans no HNSW index; `iterative`:
    pgvector scans HNSW iteratively (0.8 and later; `search_plan_inputs`)."""
    if plan != "index":
        return None
    return "search_hnsw_settings" if iterative else "search_hnsw_ef_search"


def _search_settings(conn: Connection, hnsw: str | None, params: Mapping[str, Any]) -> None:
    """The settings of a search statement's transaction (they last the transaction): no JIT, the
    parallel workers and the prepared statements' plans of `params`, and the HNSW settings of
    query `hnsw` (`hnsw_settings`)."""
    conn.execute(QUERIES["search_transaction_settings"], params)
    if hnsw is not None:
        conn.execute(QUERIES[hnsw], params)


def _part(conn: Connection, name: str, plan: str, hnsw: str | None, params: Mapping[str, Any],
          part: str = "lexical") -> list[dict[str, Any]]:
    """The full-text part of a split search (its rows: the full-text hits and their neighbours;
    `lexical_rows`: those of a list given), in one round trip, on its generic plan
    (`LEXICAL_PLAN`); the recent turns come with the other part."""
    return _statement(conn, hnsw, SEARCH_PARTS[(name, plan, part)], {**params, **LEXICAL_PLAN, "k_recent": 0})


# The plan of a split search's full-text statements: their generic plan, whatever the scope. The
# matches come from message_terms' GIN index and the rows by key whatever the values, so a plan
# made for them finds the same, and planning it each time is a sizeable share of the part
# (docs/BENCHMARKS.md, "Scale"). The dense part keeps the plan of `Plan.generic`: its
# pool's plan depends on the values (the index plan's generic plan scanned the heavy user's rows).
LEXICAL_PLAN = {"plan_cache_mode": "force_generic_plan"}


def _statement(conn: Connection, hnsw: str | None, query: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of one search statement, prepared, in its own transaction with the search's
    settings (`_search_settings`), in one round trip."""
    with _one_round_trip(conn):
        _search_settings(conn, hnsw, params)
        rows = conn.execute(_text(query, params), params, prepare=True)
    return rows.fetchall()


@contextmanager
def _one_round_trip(conn: Connection) -> Iterator[None]:
    """The statements of the block as one transaction in one round trip: queued in a pipeline
    (psycopg begins the transaction before the first), then COMMIT queued as one more statement.
    psycopg's `transaction()` waits for the server at its start and its end too, two round trips
    more for every statement. A statement that fails aborts
    the rest, COMMIT included, and raises at the block's end; the pool's connection then rolls
    the transaction back when it is returned."""
    with conn.pipeline():
        yield
        conn.execute("commit")


def _text(query: str, params: Mapping[str, Any]) -> str:
    """The text of search statement `query` for `params`: without its time-range tests when the
    search has no time range (`memctx.retrieve.queries.UNRANGED`)."""
    return UNRANGED[query] if params["since"] is None and params["until"] is None else query


# The rank columns of the candidate rows, one per signal: a split search's two parts each fill
# those of their own lists.
_RANK_COLUMNS = tuple(s.rank_column for s in SIGNALS)


def _lexical_part(conn: Connection, name: str, plan: str, hnsw: str | None, params: dict[str, Any],
                  vector: "Future[np.ndarray]", summaries_claim: threading.Lock | None,
                  common: "ScopeTerms | None" = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """The full-text part's rows, then the summaries when this part ends first
    (`summaries_claim`: a lock the first part to end takes, never released), else None. With the
    query's vector at hand, one statement (`_part`); before it is made (`vector` not done), the
    list first (`LEXICAL_LISTS`, skipping the scope's known common terms, `common`, and telling
    it those of this query), then, with the vector, the rows of its hits."""
    if vector.done():
        params = {**params, "query_vec": vector.result()}
        rows = _part(conn, name, plan, hnsw, params)
    else:
        known = common.known() if common is not None else []
        listed = _statement(conn, hnsw, LEXICAL_LISTS[(name, plan)], {**params, **LEXICAL_PLAN, "known_common": known})
        if common is not None and listed:
            common.learn(listed[0]["common_terms"] or ())
        params = {**params, "query_vec": vector.result(), "lexical_ids": [r["id"] for r in listed],
                  "lexical_conversations": [r["conversation_id"] for r in listed],
                  "lexical_seqs": [r["seq"] for r in listed], "lexical_ranks": [r["rank"] for r in listed]}
        rows = _part(conn, name, plan, hnsw, params, "lexical_rows")
    if summaries_claim is not None and summaries_claim.acquire(blocking=False):
        return rows, _summaries(conn, params)
    return rows, None


def merge_parts(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of a split search's two parts as the whole statement returns them: each message
    once, with its ranks from both, a hit when it is one in either; in (conversation, seq) order.
    A row in both parts is the same message read twice: all but its ranks and hit flag agree.
    Keyed and sorted by the UUIDs' ints, whose hash and comparisons are not Python code (the two
    parts' UUIDs are distinct objects, and one conversation's rows tie on it in every comparison)."""
    rows = {r["id"].int: r for r in first}
    for r in second:
        known = rows.get(r["id"].int)
        if known is None:
            rows[r["id"].int] = r
            continue
        for column in _RANK_COLUMNS:
            if known[column] is None:
                known[column] = r[column]
        known["is_hit"] = known["is_hit"] or r["is_hit"]
    return sorted(rows.values(), key=lambda r: (r["conversation_id"].int, r["seq"]))


def _summaries(conn: Connection, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The summary rows of a user-wide search (`search_user_summaries`), in one round trip, on
    its generic plan: it reads a user's summaries through their index and scores each whatever the
    values, and planning it for them took about as long as running it, for the same rows."""
    return _statement(conn, None, SUMMARY_QUERY, {**params, "plan_cache_mode": "force_generic_plan"})


def _remember(cache: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    """Cache `value` for a scope, forgetting the scope stored longest ago past CACHED_SCOPES."""
    cache.pop(key, None)
    cache[key] = value
    if len(cache) > CACHED_SCOPES:
        cache.popitem(last=False)


class CommonTerms:
    """The common terms of each scope's full-text list (`search_lexical_bounded`: a term matching
    more than k_match turns), as its lists found them: the list alone (`search_lexical_list`) does
    not read them again. Reading a common term's k_match + 1 matches only to learn that it is
    common was a large share of the heavy user's matches (bench/scale.py's questions). A scope's
    matches only grow as it grows, so a common
    term stays common: a scope that shrank (deletions) forgets its terms, and one whose k_match
    differs does not use them; an edit that takes a common term out of turns goes unnoticed while
    the scope stays cached. A time range's lists neither use nor teach them. The lists are those
    that read every term (BM25's shares are rounded to sum alike in any order: retrieve.sql's
    `search_lexical_exact`). Safe to share between threads."""

    def __init__(self) -> None:
        # (scope, k_match) -> the terms, and the scope's size when they were last found
        self._terms: OrderedDict[tuple[Scope, int], tuple[frozenset[str], int]] = OrderedDict()

    def scoped(self, scope: Scope | None, scope_size: int, k_match: int) -> "ScopeTerms | None":
        """The common terms of `scope` (None: a search with a time range) at its size now."""
        return None if scope is None else ScopeTerms(self, scope, scope_size, k_match)

    def known(self, scope: Scope, scope_size: int, k_match: int) -> list[str]:
        return sorted(self._current((scope, k_match), scope_size))

    def learn(self, scope: Scope, scope_size: int, k_match: int, terms: Sequence[str]) -> None:
        key = (scope, k_match)
        _remember(self._terms, key, (self._current(key, scope_size) | frozenset(terms), scope_size))

    def _current(self, key: tuple[Scope, int], scope_size: int) -> frozenset[str]:
        """The terms still known for `key` at `scope_size`: none once the scope has shrunk."""
        entry = self._terms.get(key)
        return entry[0] if entry is not None and entry[1] <= scope_size else frozenset()


@dataclass(frozen=True)
class ScopeTerms:
    """`CommonTerms` of one scope at one size and k_match, as a search's full-text list uses them."""

    cache: CommonTerms
    scope: Scope
    scope_size: int
    k_match: int

    def known(self) -> list[str]:
        return self.cache.known(self.scope, self.scope_size, self.k_match)

    def learn(self, terms: Sequence[str]) -> None:
        self.cache.learn(self.scope, self.scope_size, self.k_match, terms)


# What one tuple visited by a filtered HNSW scan costs, in rows of the exact scan (index
# traversal plus a heap fetch to test the filter, against one cosine over an in-row vector).
# Measured for the heavy user of the realistic databases (docs/RETRIEVAL.md, server time of its
# dense list per estimated visit): ~9 rows at 200k messages, ~20 at 1M, where the graph and the
# rows it visits are less often cached.
INDEX_VISIT_COST = 12.0
# The quantized pool's costs in the same unit: one code of the Hamming scan (an index-only read
# of ~100 bytes) and one code's rescoring (a primary-key lookup of its row). Measured on the 200k
# realistic database: a heavy user's 100,000 codes took 0.13 of the exact scan's time per row,
# rescoring 1,000 of them 3.3 rows' each; 4 puts the break-even with the exact scan where it was
# measured, at users of ~5,000 messages.
CODE_COST = 0.13
LOOKUP_COST = 4.0


def pool_size(opts: SearchOptions) -> int:
    """Turns taken from the HNSW index before exact rescoring."""
    return max(opts.k_dense, opts.k_pool)


@dataclass(frozen=True)
class Plan:
    """How one search runs, from its scope's plan inputs (`search_plan_inputs`): the plan (a key of
    `memctx.retrieve.queries.PLANS`), its HNSW settings' query (`hnsw_settings`), whether it runs
    its generic plan (`runs_generic`), and whether it splits in two (past the exact scan: the full
    text beside the rest, `MemorySearch.fetch`)."""

    plan: str
    hnsw: str | None
    generic: bool
    split: bool
    scope_size: int
    own: bool = False  # the user's own HNSW index serves the dense list (`_for_user`)

    @property
    def lexical_first(self) -> bool:
        """The full text is the longer part, so its list starts before the query is embedded:
        a user's own HNSW index makes the dense list fast, while the full text over a heavy
        user's many turns is not."""
        return self.split and self.plan == "index"

    @property
    def params(self) -> dict[str, Any]:
        """The search statements' parameters this plan sets."""
        return {"scope_size": self.scope_size,
                "plan_cache_mode": "force_generic_plan" if self.generic else "force_custom_plan"}


def plan_of(inputs: Mapping[str, Any], opts: SearchOptions, time_range: TimeRange | None,
            conversation: UUID | None) -> Plan:
    """The `Plan` of a search of `conversation` (None: all of the user's memory) over a scope with
    these plan inputs."""
    size = inputs["scope_size"]
    plan = choose_plan(size, inputs["table_rows"], opts, matches_indexed=inputs["scope_tsv_index"],
                       ranged=time_range is not None, user_wide=conversation is None,
                       own_index=inputs["own_index"], iterative=inputs["iterative_scan"])
    own = plan == "index" and takes_own_index(conversation is None, inputs["own_index"], time_range is not None)
    return Plan(plan, hnsw_settings(plan, inputs["iterative_scan"]), runs_generic(plan, own, time_range is not None),
                size > opts.exact_limit, size, own)


def _for_user(query: str, user: UUID) -> str:
    """`query` with the user's id written in it: the user's own HNSW index is a partial index
    (`where user_id = '…'`), which a plan can take only for a user it knows, so the statement of a
    user with one is that user's own, prepared and planned once per connection (`runs_generic`)."""
    return query.replace("%(user_id)s::uuid", f"'{UUID(str(user))}'::uuid")


def runs_generic(plan: str, own: bool = False, ranged: bool = False) -> bool:
    """Whether a search's statements of `plan` run on their prepared generic plan, rather than on
    a custom plan made for their values (every search statement is prepared: parsed once per
    connection).

    The bounded plan's do, whatever the scope's size: they read the scope through its index and
    score every turn of it, so a plan made for the values finds the same plan, and making it was
    a third of a search's time (docs/BENCHMARKS.md, "Latency"). Past the exact scan the dense
    part of users of a few thousand messages and of a long conversation is faster on its generic
    plan too, for the same rows. A generic plan assumes the average scope, for one
    conversation a few dozen turns; it finds the full-text matches through message_terms' GIN
    index all the same, the only index of that table on the scope (migration 0026). Before, it
    could read the matches of a long conversation by testing each of its messages' tsvectors.
    The index plan through a user's own index (`own`) runs generic too, its statement written for
    that user (`_for_user`), for the same rows. Through the table's index it is planned for its
    values, as its pool comes from them (a generic plan with the user as a parameter cannot take
    a partial index, and scanned all of the heavy user's rows), and so is the
    exact plan, whose generic plan was no faster and slower in its tail. The quantized plan runs
    generic without a time range (`ranged`): its statement then tests none (`_text`), and its
    dense part is faster than planned for its values, for the same rows; with one, each
    time-range test would cost it a filter per code.
    (A split search's full-text part runs generic whatever its plan: `LEXICAL_PLAN`.)
    """
    return plan == "bounded" or (plan == "index" and own) or (plan == "quantized" and not ranged)


def takes_own_index(user_wide: bool, own_index: bool, ranged: bool) -> bool:
    """Whether a search can take the user's own HNSW index (a partial index of all their messages):
    all of the user's memory, without a time range."""
    return user_wide and bool(own_index) and not ranged


def choose_plan(scope_size: int, table_rows: int, opts: SearchOptions, *, matches_indexed: bool = False,
                ranged: bool = False, user_wide: bool = False, own_index: bool = False, iterative: bool = True) -> str:
    """The plan (a key of `memctx.retrieve.queries.PLANS`) for a scope of `scope_size` messages
    in a table of about `table_rows` (0 when never analyzed).

    Up to `exact_limit` the dense list is exact, and so is the full-text list: from the matching
    turns alone when an index serves the scope's matches (`matches_indexed`, migration 0014) and
    its conversations' counters hold its mean length (no time range, `ranged`), else from every
    turn. Past it, a filtered index scan finds the pool after visiting about pool / share tuples
    (share: the scope's share of the table); it is used when that costs less than reading the
    scope and fits in `max_scan_tuples`. All of a user's memory (`user_wide`) may also take the
    quantized pool (`opts.k_codes` codes rescored, unless 0), whose cost follows the user's size
    alone. A user the worker gave an HNSW index of their own (`own_index`, memctx/pipeline/user_index.py)
    is searched without a time range through it, which holds that user's vectors alone: the index
    plan then visits about the pool, whatever the table. Without iterative scans (pgvector before
    0.8: not `iterative`) an index scan yields at most ef_search tuples before the scope's filter,
    so the index plan applies only to a user's own index, which holds nothing else. Of the plans
    that apply, the cheapest in rows of the exact scan.
    """
    if scope_size <= opts.exact_limit:
        return "bounded" if matches_indexed and not ranged else "exact"
    costs = {"bounded": float(scope_size)}
    own = takes_own_index(user_wide, own_index, ranged)
    share = 1.0 if own else scope_size / max(table_rows, scope_size)
    visits = pool_size(opts) / share
    if visits <= opts.max_scan_tuples / 2 and (iterative or own):
        costs["index"] = visits * INDEX_VISIT_COST
    if user_wide and opts.k_codes > 0:
        costs["quantized"] = scope_size * CODE_COST + max(opts.k_codes, pool_size(opts)) * LOOKUP_COST
    return min(costs, key=costs.__getitem__)


def score_hit(row: Mapping[str, Any], ranks: Mapping[str, int | None], analysis: QueryAnalysis, opts: SearchOptions,
              threshold: float) -> float | None:
    """The fused score of a candidate with these `ranks`, or None when it falls under the
    similarity threshold.

    The threshold applies to candidates no full-text match vouches for: a lexical hit is kept
    whatever its cosine similarity (names and rare words embed poorly). A summary's score is
    scaled by `opts.summary_weight`.
    """
    similarity = row["similarity"]
    if row["lexical_rank"] is None and (similarity is None or similarity < threshold):
        return None
    score = rrf(ranks, opts.weights)
    if row["kind"] != "message":
        return score * opts.summary_weight
    if opts.speaker_boost and row.get("speaker") in analysis.speakers:
        score *= 1 + opts.speaker_boost
    return score


def build_memories(rows: Sequence[Mapping[str, Any]], analysis: QueryAnalysis, opts: SearchOptions,
                   threshold: float, limit: int | None = None) -> list[Memory]:
    """Fuse, threshold, pair and expand candidate rows into memories, best first; the first
    `limit` of them when given."""
    # Turns by (conversation, seq) and the turns covered, by the UUIDs' ints: ~1,000 look-ups per
    # search, and UUID.__hash__ is Python code, int's is not.
    by_seq = {(r["conversation_id"].int, r["seq"]): r for r in rows if r["kind"] == "message"}
    scored = []
    for row in rows:
        if row["is_hit"]:
            ranks = ranks_of(row)
            score = score_hit(row, ranks, analysis, opts, threshold)
            if score is not None:
                scored.append((score, row, ranks))
    scored.sort(key=lambda item: -item[0])
    memories: list[Memory] = []
    covered: set[int] = set()
    for score, row, ranks in scored:
        if len(memories) == limit:
            break
        if row["id"].int in covered:
            continue
        if row["kind"] == "message":
            members = _members(row, by_seq, opts)
            covered.update(m["id"].int for m in members)
            fragments = tuple(Fragment.from_row(m) for m in members)
            first, last = fragments[0].seq, fragments[-1].seq
        else:
            fragments = (_summary_fragment(row),)
            first, last = row["first_seq"], row["last_seq"]
        # ~100 per search: without the frozen __init__ (memctx.frozen)
        provenance = frozen_new(Provenance, {"ranks": ranks, "speaker_match": row.get("speaker") in analysis.speakers,
                                             "first_seq": first, "last_seq": last})
        memories.append(frozen_new(Memory, {
            "kind": row["kind"], "id": row["id"], "conversation_id": row["conversation_id"], "fragments": fragments,
            "score": score, "similarity": None if row["similarity"] is None else float(row["similarity"]),
            "provenance": provenance}))
    return memories


def _members(row: Mapping[str, Any], by_seq: Mapping[tuple, Mapping[str, Any]], opts: SearchOptions) -> list[Mapping[str, Any]]:
    """The hit, its pair (user → the reply after it, assistant → the user turn before it) and
    `opts.neighbours` turns either side, in conversation order. `by_seq`: the turns by their
    conversation id's int and seq. Without neighbours a search reads only the pair's side of a
    hit (retrieve.sql's `search_hits`, `partner_side`): the two must name the same turn."""
    conv, seq = row["conversation_id"].int, row["seq"]
    seqs = {seq}
    if opts.pair:
        other = seq + 1 if row["role"] == "user" else seq - 1 if row["role"] == "assistant" else None
        partner = by_seq.get((conv, other)) if other is not None else None
        if partner is not None and partner["role"] != row["role"] and _same_session(row, partner) \
                and _partner_adds(row, partner, opts.pair_rank):
            seqs.add(other)
    for step in range(1, opts.neighbours + 1):
        for s in (seq - step, seq + step):
            near = by_seq.get((conv, s))
            if near is not None and _same_session(row, near):
                seqs.add(s)
    return [by_seq[(conv, s)] for s in sorted(seqs) if (conv, s) in by_seq]


def _partner_adds(row: Mapping[str, Any], partner: Mapping[str, Any], pair_rank: int | None) -> bool:
    """Whether the partner turn is worth its tokens: the hit is a question, or the partner ranks
    within `pair_rank` of a relevance list itself."""
    if pair_rank is None or row["text"].rstrip().endswith("?"):
        return True
    rank = best_relevance_rank(partner)
    return rank is not None and rank <= pair_rank


def _same_session(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.get("session") is None or b.get("session") is None or a["session"] == b["session"]


def _summary_fragment(row: Mapping[str, Any]) -> Fragment:
    return Fragment(id=row["id"], conversation_id=row["conversation_id"], role="summary", text=row["text"],
                    seq=None, time=row["created_at"], token_count=int(row["token_count"] or 0))


def search_memories(app: Any, user: UUID, query: str, conversation: UUID | None = None,
                    time_range: TimeRange | None = None, limit: int = 10, threshold: float | None = None,
                    *, reranker: Reranker | None = None, now: datetime | None = None) -> list[Memory]:
    """Memory search with the app's settings (see `MemorySearch.search`), asked at `now` (by
    default the present: the query's relative dates mean the days they name today), the user's
    ratings of memories weighing its order (`memctx.learn.recall.with_ratings`)."""
    from memctx.learn.recall import RATED_DEPTH, ProfileOptions, with_ratings

    engine = MemorySearch(app.pool, app.embedder, SearchOptions.from_settings(app.settings), reranker)
    found = engine.search(user, query, conversation, time_range, limit + RATED_DEPTH, threshold,
                          now=now or datetime.now(timezone.utc))
    return with_ratings(app.pool, user, found, ProfileOptions.from_settings(app.settings))[:limit]
