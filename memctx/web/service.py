"""External search end to end: decide, anonymize, look in the cache, search, fetch, clean, cache.

Owns: `WebSearch`, what the context assembler calls (and `memctx search-web`). It records every
decision (a metric, the report it returns, a debug log line) and never raises for a failing
engine, page or cache: the report says what failed and the metrics count it.
"""

from __future__ import annotations

import logging
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Sequence
from uuid import UUID

import psycopg

from memctx import metrics
from memctx.web.anonymize import Anonymizer
from memctx.web.cache import Cached, SearchCache, fingerprint
from memctx.web.clean import clean_html
from memctx.web.decide import YesNo, decide
from memctx.web.engines import EngineChain, make_engines
from memctx.web.fetch import Fetcher, FetchRefused
from memctx.web.slm import SmallLLM
from memctx.web.types import Decision, Hit, SearchFailed, SearchReport, WebResult
from memctx.tokens import TokenCounter

log = logging.getLogger("memctx.web")


@dataclass(frozen=True)
class WebSearchOptions:
    threshold: float = 1.0
    max_results: int = 3
    result_tokens: int = 300  # cleaned text per result
    cache_ttl_s: float = 3600.0
    deadline_s: float = 10.0  # the whole search: engines and page fetches

    @classmethod
    def from_settings(cls, settings: Any) -> "WebSearchOptions":
        return cls(threshold=settings.web_keyword_threshold, max_results=settings.web_max_results,
                   result_tokens=settings.web_result_tokens, cache_ttl_s=settings.web_cache_ttl_s,
                   deadline_s=settings.web_deadline_s)


class WebSearch:
    """One per App, shared by its users' scoped copies; each assembler uses it `scoped` to its App's
    pool (row-level security scopes the cache). Safe to share between threads."""

    def __init__(self, chain: EngineChain, fetcher: Fetcher, counter: TokenCounter, *, pool: Any = None,
                 anonymizer: Anonymizer | None = None, options: WebSearchOptions | None = None,
                 slm: YesNo | None = None) -> None:
        self.chain = chain
        self.fetcher = fetcher
        self.counter = counter
        self.options = options or WebSearchOptions()
        self.cache = SearchCache(pool, self.options.cache_ttl_s) if pool is not None else None
        self.anonymizer = anonymizer or Anonymizer()
        self.slm = slm

    @classmethod
    def from_settings(cls, settings: Any, counter: TokenCounter, pool: Any = None) -> "WebSearch | None":
        """The configured external search, or None when no engine is configured (off)."""
        engines = make_engines(settings)
        if not engines:
            return None
        fetcher = Fetcher(timeout_s=settings.web_fetch_timeout_s, max_bytes=settings.web_fetch_max_bytes,
                          max_redirects=settings.web_fetch_max_redirects,
                          allow_private=settings.web_allow_private)
        return cls(EngineChain(engines), fetcher, counter, pool=pool,
                   anonymizer=Anonymizer(tuple(settings.web_anonymize_patterns)),
                   options=WebSearchOptions.from_settings(settings), slm=SmallLLM.from_settings(settings))

    def scoped(self, pool: Any) -> "WebSearch":
        """This search with its cache on `pool`; the engines, fetcher and small model are shared."""
        return WebSearch(self.chain, self.fetcher, self.counter, pool=pool, anonymizer=self.anonymizer,
                         options=self.options, slm=self.slm)

    def decide(self, query: str, *, known: str = "", people: Sequence[str] = (),
               memories: Sequence[str] = ()) -> Decision:
        decision = decide(query, threshold=self.options.threshold, known=known, people=people, memories=memories,
                          slm=self.slm)
        metrics.SEARCH_DECISIONS.labels("search" if decision.search else "skip", decision.by).inc()
        # Not the reason: it quotes the query's words.
        log.debug("external search %s (%s)", "yes" if decision.search else "no", decision.by)
        return decision

    def external(self, query: str, *, user: UUID, people: Sequence[str] = (), known: str = "",
                 memories: Sequence[str] = (), conversation: UUID | None = None) -> SearchReport:
        """Decide, and search when the decision is yes (what the context assembler calls for
        `conversation`: its answer is cached only while that conversation exists)."""
        decision = self.decide(query, known=known, people=people, memories=memories)
        if not decision.search:
            return SearchReport(decision)
        try:
            return self.run(query, decision, user=user, people=people, conversation=conversation)
        except Exception as exc:  # a search must never fail the context: reported and counted instead
            metrics.SEARCH_FAILURES.labels("error").inc()
            # Where it raised, not what it said: an exception's text may quote the query or a URL.
            log.error("external search raised", extra={"fields": {
                "error": type(exc).__name__, "trace": "".join(traceback.format_tb(exc.__traceback__))}})
            return SearchReport(decision, errors=(f"{type(exc).__name__}: {exc}",))

    def run(self, query: str, decision: Decision, *, user: UUID, people: Sequence[str] = (),
            max_results: int | None = None, conversation: UUID | None = None) -> SearchReport:
        """Search for `query` (anonymized first); failures are in the report, never raised.
        `max_results` overrides the configured count for this search (the MCP tool's argument)."""
        started = time.perf_counter()
        deadline = time.monotonic() + self.options.deadline_s
        sent = self.anonymizer.clean(query, people)
        ms: dict[str, float] = {}
        errors: list[str] = []
        count = max_results or self.options.max_results
        key = fingerprint(sent, engines=self.chain.names, max_results=count, result_tokens=self.options.result_tokens)
        claimed = False
        try:
            cached, claimed = self._cached(user, key, sent, errors, conversation)
            if cached is not None:
                ms["total"] = _ms(started)
                return SearchReport(decision, sent, cached.engine, True, cached.results, tuple(errors), ms)
            try:
                answer = self.chain.search(sent, count, deadline=deadline)
            except SearchFailed as exc:
                metrics.SEARCH_FAILURES.labels("engine").inc()
                log.warning("external search failed: %s", exc)
                ms["total"] = _ms(started)
                return SearchReport(decision, sent, None, False, (), (*errors, str(exc)), ms)
            errors += answer.errors
            ms["engine"] = _ms(started)
            t0 = time.perf_counter()
            results = self._pages(answer.hits, errors, deadline)
            ms["fetch"] = _ms(t0)
            if claimed and results:
                claimed = not self._store(user, key, sent, answer.engine, answer.hits, results, errors)
            ms["total"] = _ms(started)
            return SearchReport(decision, sent, answer.engine, False, tuple(results), tuple(errors), ms)
        finally:
            if claimed:  # nothing stored in it (no results, the engines failed, an error)
                self._release(user, key, errors)
            metrics.SEARCH_DURATION.observe(time.perf_counter() - started)

    def _cached(self, user: UUID, key: str, sent: str, errors: list[str],
                conversation: UUID | None) -> tuple[Cached | None, bool]:
        """(the cached answer, None on a miss; whether the key is claimed for this search)."""
        if self.cache is None:
            return None, False
        try:
            cached = self.cache.lookup(user, key, sent, conversation=conversation)
        except psycopg.Error as exc:
            metrics.SEARCH_FAILURES.labels("cache").inc()
            errors.append(f"cache: {type(exc).__name__}: {exc}")
            return None, False
        metrics.SEARCH_CACHE.labels("hit" if cached else "miss").inc()
        return cached, cached is None

    def _store(self, user: UUID, key: str, sent: str, engine: str, hits: Sequence[Hit],
               results: Sequence[WebResult], errors: list[str]) -> bool:
        try:
            self.cache.put(user, key, sent, engine, hits, results)
            return True
        except psycopg.Error as exc:
            metrics.SEARCH_FAILURES.labels("cache").inc()
            errors.append(f"cache: {type(exc).__name__}: {exc}")
            return False

    def _release(self, user: UUID, key: str, errors: list[str]) -> None:
        try:
            self.cache.release(user, key)
        except psycopg.Error as exc:
            metrics.SEARCH_FAILURES.labels("cache").inc()
            errors.append(f"cache: {type(exc).__name__}: {exc}")

    def _pages(self, hits: Sequence[Hit], errors: list[str], deadline: float) -> list[WebResult]:
        """Each hit's page, fetched and cleaned in parallel by `deadline`; a page that fails or is
        not in by then keeps its snippet (its fetch, cut at the same deadline, is not waited for)."""
        if not hits:
            return []
        pool = ThreadPoolExecutor(max_workers=len(hits), thread_name_prefix="memctx-fetch")
        try:
            futures = [pool.submit(self._page, hit, deadline) for hit in hits]
            wait(futures, timeout=max(0.0, deadline - time.monotonic()))
            pages = [f.result() if f.done() else self._snippet(hit, f"{hit.url}: not fetched by the search's deadline")
                     for f, hit in zip(futures, hits)]
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        results = []
        for result in pages:
            if result.note:
                metrics.SEARCH_FAILURES.labels("fetch").inc()
                errors.append(f"fetch: {result.note}")
            if result.text:
                results.append(result)
        return results

    def _page(self, hit: Hit, deadline: float) -> WebResult:
        try:
            page = self.fetcher.fetch(hit.url, deadline=deadline)
        except FetchRefused as exc:
            return self._snippet(hit, str(exc))
        clean = clean_html(page.html, hit.url, self.counter, self.options.result_tokens)
        if not clean.text:
            return WebResult(hit.title, hit.url, hit.snippet, fetched=False, note=f"{hit.url}: no readable text")
        return WebResult(hit.title or clean.title, hit.url, clean.text, fetched=True)

    def _snippet(self, hit: Hit, note: str) -> WebResult:
        """The hit's snippet in place of a page that was not fetched, and why."""
        return WebResult(hit.title, hit.url, self.counter.truncate(hit.snippet, self.options.result_tokens),
                         fetched=False, note=note)


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)
