"""External search against a loopback web: engines and their fallback, safe fetching, the cache,
and the working context with web results (tests/web_support.py serves the pages)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg
import pytest

from memctx.app import open_app
from memctx.assemble import get_working_context
from memctx.config import Settings
from memctx.models import NewMessage
from memctx.web import EngineChain, SearchFailed, WebSearch
from memctx.web.engines import DuckDuckGoEngine, SearxngEngine, make_engines
from memctx.web.fetch import Fetcher, FetchRefused, is_public
from memctx.web.service import WebSearchOptions
from memctx.web.types import Decision
from memctx.sql import QUERIES
from memctx.tokens import get_counter, messages_tokens
from web_support import LoopbackWeb

YES = Decision(True, "test", "keyword")


@pytest.fixture(scope="module")
def web():
    server = LoopbackWeb()
    yield server
    server.close()


def _web_search(web, engines, **kw) -> WebSearch:
    return WebSearch(EngineChain(engines), Fetcher(allow_private=True, timeout_s=2), get_counter("cl100k_base"), **kw)


def test_searxng_and_duckduckgo_return_hits_without_ads(web):
    hits = SearxngEngine(web.base + "/searxng").search("postgres 18", 3)
    assert [h.url for h in hits] == [web.base + "/article/news", web.base + "/article/blog", web.base + "/pdf"]
    ddg = DuckDuckGoEngine(web.base + "/ddg/html/").search("postgres 18", 3)
    assert [h.title for h in ddg][0] == "PostgreSQL 18 released with asynchronous I/O"
    assert ddg[0].url == web.base + "/article/news"  # unwrapped from duckduckgo.com/l/?uddg=
    assert not any("CloudDB" in h.title for h in ddg) and len(ddg) == 3


def test_a_failing_or_slow_engine_falls_back_to_the_next(web):
    chain = EngineChain([SearxngEngine(web.base + "/broken"), SearxngEngine(web.base + "/slow", timeout_s=0.3),
                         DuckDuckGoEngine(web.base + "/ddg/html/")])
    answer = chain.search("postgres 18", 3)
    assert answer.engine == "duckduckgo" and len(answer.hits) == 3
    assert "502" in answer.errors[0] and "Timeout" in answer.errors[1]
    with pytest.raises(SearchFailed):
        EngineChain([SearxngEngine(web.base + "/broken")]).search("q", 3)


def test_fetch_refuses_oversize_non_html_and_endless_redirects(web):
    fetcher = Fetcher(allow_private=True, max_bytes=100_000, max_redirects=2)
    with pytest.raises(FetchRefused, match="cap of 100000"):
        fetcher.fetch(web.base + "/big")
    with pytest.raises(FetchRefused, match="not HTML"):
        fetcher.fetch(web.base + "/pdf")
    with pytest.raises(FetchRefused, match="more than 2 redirects"):
        fetcher.fetch(web.base + "/redirect/loop")
    # a redirect is followed, and the cookie its hop set is not sent on (the page refuses cookies)
    assert "asynchronous I/O" in fetcher.fetch(web.base + "/redirect/news").html


def test_private_addresses_are_refused_on_every_hop_and_after_resolution(web):
    """allow_private off. The loopback server stands in for a public site: the fetcher is told that
    127.0.0.1 is a public address, as a real site's address is."""
    names = {"127.0.0.1": ["127.0.0.1"], "169.254.169.254": ["169.254.169.254"],
             "intranet.test": ["10.0.0.5"], "sneaky.example": ["127.0.0.1", "10.0.0.7"]}
    fetcher = Fetcher(allow_private=False, resolve=lambda host, port: names[host],
                      public=lambda address: address == "127.0.0.1" or is_public(address))
    assert "asynchronous I/O" in fetcher.fetch(web.base + "/redirect/news").html
    with pytest.raises(FetchRefused, match=r"169\.254\.169\.254 resolves to a non-public address"):
        fetcher.fetch(web.base + "/redirect/metadata")
    with pytest.raises(FetchRefused, match=r"intranet\.test resolves to a non-public address \(10\.0\.0\.5\)"):
        fetcher.fetch(web.base + "/redirect/internal")
    with pytest.raises(FetchRefused, match="non-public"):
        fetcher.fetch("http://sneaky.example/")
    with pytest.raises(FetchRefused, match="non-public"):  # the real resolver: loopback as it is
        Fetcher().fetch(web.base + "/article/news")
    with pytest.raises(FetchRefused, match="not an http"):
        fetcher.fetch("file:///etc/passwd")


class _Site(ThreadingHTTPServer):
    """A page server on one loopback address: `page` answered at once, or dripped."""

    def __init__(self, address: tuple[str, int], page: bytes, drip_s: float | None = None) -> None:
        site = self
        self.hosts: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                site.hosts.append(self.headers.get("Host"))
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                try:
                    for i in range(0, len(page), 5 if drip_s else len(page)):
                        self.wfile.write(page[i:i + (5 if drip_s else len(page))])
                        self.wfile.flush()
                        if drip_s:
                            time.sleep(drip_s)
                except (BrokenPipeError, ConnectionResetError):  # the fetcher gave up: as it should
                    pass

        super().__init__(address, Handler)
        self.daemon_threads = True
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()


def test_the_fetch_connects_to_the_address_it_checked_not_to_a_later_dns_answer():
    """`localhost` is checked as 127.0.0.2 (the fetcher's resolver: the answer a rebinding DNS server
    gives first), while the system resolves it to 127.0.0.1 (the answer it gives next), where the
    private page is served on the same port."""
    checked = _Site(("127.0.0.2", 0), b"<html><body><p>the page that was checked</p></body></html>")
    port = checked.server_address[1]
    try:
        private = _Site(("127.0.0.1", port), b"<html><body><p>private admin page</p></body></html>")
    except OSError:
        checked.close()
        pytest.skip("the port of 127.0.0.2 is taken on 127.0.0.1")
    try:
        fetcher = Fetcher(resolve=lambda host, port: ["127.0.0.2"], public=lambda address: address == "127.0.0.2")
        page = fetcher.fetch(f"http://localhost:{port}/")
        assert "the page that was checked" in page.html and page.url == f"http://localhost:{port}/"
        assert private.hosts == [] and checked.hosts == [f"localhost:{port}"]
    finally:
        checked.close()
        private.close()


def test_a_page_that_drips_in_is_cut_at_the_fetch_deadline():
    site = _Site(("127.0.0.1", 0), b"<html><body>" + b"x" * 200 + b"</body></html>", drip_s=0.5)
    try:
        started = time.monotonic()
        with pytest.raises(FetchRefused, match="within 2 s"):
            Fetcher(allow_private=True, timeout_s=2).fetch(f"http://127.0.0.1:{site.server_address[1]}/")
        assert time.monotonic() - started < 3.5  # each read was quick: only the deadline stops it
    finally:
        site.close()


class _Engine(ThreadingHTTPServer):
    """A SearXNG-compatible engine on loopback whose one hit is `url`."""

    def __init__(self, url: str) -> None:
        body = json.dumps({"results": [{"title": "Harbour news", "url": url,
                                        "content": "The harbour reopens on Monday."}]}).encode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__(("127.0.0.1", 0), Handler)
        self.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()


def test_a_dripping_result_page_holds_a_context_call_no_longer_than_the_search_deadline(database_url, embedder):
    """A page that drips 5 bytes every 2 s, under fetch and engine timeouts of 30 s: the context
    call's whole external search ends at MEMCTX_WEB_DEADLINE_S (2 s), keeping the hit's snippet."""
    site = _Site(("127.0.0.1", 0), b"<html><body><p>" + b"harbour " * 100 + b"</p></body></html>", drip_s=2)
    engine = _Engine(f"http://127.0.0.1:{site.server_address[1]}/harbour")
    settings = Settings(database_url=database_url, pool_min_size=1, pool_max_size=4, web_engines=["searxng"],
                        searxng_url=engine.url, web_allow_private=True, web_keyword_threshold=0,
                        web_timeout_s=30, web_fetch_timeout_s=30, web_deadline_s=2)
    user = uuid.uuid4()
    try:
        with open_app(settings, embedder=embedder) as memctx_app:
            conv = _conversation(memctx_app, user)
            started = time.monotonic()
            wc = get_working_context(memctx_app, conv.id, "latest news about the harbour", 800, user=user)
            took = time.monotonic() - started
        assert took < 4.5, f"the context call took {took:.1f} s"
        assert [r.text for r in wc.external.results] == ["The harbour reopens on Monday."]
        assert not wc.external.results[0].fetched
        assert any("by the search's deadline" in e for e in wc.external.errors), wc.external.errors
    finally:
        engine.close()
        site.close()


def test_no_engine_is_asked_once_the_search_deadline_has_passed(web):
    chain = EngineChain([SearxngEngine(web.base + "/slow", timeout_s=30), SearxngEngine(web.base + "/searxng")])
    started = time.monotonic()
    with pytest.raises(SearchFailed, match="deadline had passed"):
        chain.search("postgres 18", 3, deadline=started + 0.5)
    assert time.monotonic() - started < 1.5  # the slow engine waited only the time left


def test_an_engine_answer_that_drips_in_is_cut_at_the_search_deadline():
    answer = json.dumps({"results": [{"title": "Harbour news", "url": "http://example.org/harbour",
                                      "content": "The harbour reopens on Monday."}]}).encode()
    engine = _Site(("127.0.0.1", 0), answer, drip_s=0.5)  # each read quick, the whole answer ~13 s
    try:
        started = time.monotonic()
        with pytest.raises(SearchFailed, match="ReadTimeout"):
            EngineChain([SearxngEngine(f"http://127.0.0.1:{engine.server_address[1]}", timeout_s=30)]).search(
                "harbour", 3, deadline=started + 1)
        assert time.monotonic() - started < 2.5
    finally:
        engine.close()


def test_an_engine_that_drips_is_cut_at_its_own_timeout_and_the_next_engine_answers(web):
    answer = json.dumps({"results": [{"title": "Harbour news", "url": "http://example.org/harbour",
                                      "content": "The harbour reopens on Monday."}]}).encode()
    engine = _Site(("127.0.0.1", 0), answer, drip_s=0.3)  # each read quick, the whole answer ~8 s
    settings = Settings(web_engines=["searxng", "duckduckgo"], searxng_url=f"http://127.0.0.1:{engine.server_address[1]}",
                        duckduckgo_url=web.base + "/ddg/html/", web_timeout_s=1.0, web_deadline_s=10.0)
    try:
        started = time.monotonic()
        found = EngineChain(make_engines(settings)).search("harbour", 3, deadline=started + settings.web_deadline_s)
        took = time.monotonic() - started
    finally:
        engine.close()
    assert found.engine == "duckduckgo" and found.hits and web.queries[-1] == "harbour"
    assert found.errors == ("searxng: ReadTimeout: no whole answer within 1 s",)
    assert took < 2.5  # the dripping engine had its own second, not the search's ten


def test_a_search_fetches_cleans_and_keeps_the_snippet_of_a_refused_page(web):
    report = _web_search(web, [SearxngEngine(web.base + "/searxng")]).run("postgres 18 release", YES,
                                                                          user=uuid.uuid4())
    assert report.engine == "searxng" and not report.cached and len(report.results) == 3
    news, blog, pdf = report.results
    assert news.fetched and "virtual generated columns" in news.text and "cookies" not in news.text
    assert blog.fetched and "hip scores" in blog.text
    assert not pdf.fetched and pdf.text.startswith("Release notes") and "not HTML" in pdf.note
    assert any("not HTML" in e for e in report.errors)


def test_the_query_is_anonymized_before_it_leaves(web):
    web.queries.clear()
    _web_search(web, [SearxngEngine(web.base + "/searxng")]).run(
        "latest news for caroline@example.org, Caroline's account 99887766 at Acme Corp", YES, user=uuid.uuid4(),
        people=["Caroline"])
    assert web.queries == ["latest news for, account at Acme Corp"]


def test_a_repeated_search_within_the_ttl_comes_from_the_cache(web, app):
    user, other = uuid.uuid4(), uuid.uuid4()
    search = _web_search(web, [SearxngEngine(web.base + "/searxng")], pool=app.pool,
                         options=WebSearchOptions(cache_ttl_s=600))
    web.queries.clear()
    first = search.run("postgres 18 release", YES, user=user)
    again = search.run("Postgres 18  release", YES, user=user)
    assert (first.cached, again.cached) == (False, True) and again.results == first.results
    assert len(web.queries) == 1
    assert not search.run("postgres 18 release", YES, user=other).cached  # per tenant
    expired = _web_search(web, [SearxngEngine(web.base + "/searxng")], pool=app.pool,
                          options=WebSearchOptions(cache_ttl_s=0))
    assert not expired.run("postgres 18 release", YES, user=user).cached
    assert app.store.forget_user(user)["search_cache"] == 1


def test_a_cache_write_waits_for_a_user_being_forgotten_and_then_stores_nothing(web, app, database_url):
    """forget_user's transaction, held open after its lock and deletes: a search for one of the
    user's conversations claims its cache key only after it commits, and stores no row."""
    user = uuid.uuid4()
    conv = app.store.create_conversation(user)
    search = _web_search(web, [SearxngEngine(web.base + "/searxng")], pool=app.pool)
    reports = []
    with psycopg.connect(database_url) as forgetting:
        forgetting.execute(QUERIES["lock_user"], {"user_id": user})
        forgetting.execute(QUERIES["forget_user"], {"user_id": user})
        searching = threading.Thread(target=lambda: reports.append(
            search.run("postgres 18 release", YES, user=user, conversation=conv.id)))
        searching.start()
        searching.join(3)
        assert searching.is_alive(), "the cache write did not wait for the user's lock"
        forgetting.commit()
    searching.join(10)
    assert reports and len(reports[0].results) == 3
    with psycopg.connect(database_url) as admin:
        left = admin.execute("select count(*) from memctx.search_cache where user_id = %s", (user,)).fetchone()
    assert left == (0,), "a row of the forgotten user was cached"


def _count_cache(database_url, user) -> int:
    with psycopg.connect(database_url) as admin:
        return admin.execute("select count(*) from memctx.search_cache where user_id = %s", (user,)).fetchone()[0]


def test_a_search_that_finds_nothing_to_cache_leaves_no_row_and_a_running_search_is_no_hit(web, app, database_url):
    user = uuid.uuid4()
    failing = _web_search(web, [SearxngEngine(web.base + "/broken")], pool=app.pool)
    assert failing.run("postgres 18 release", YES, user=user).engine is None
    assert _count_cache(database_url, user) == 0, "the failed search's claim was left behind"
    cache = _web_search(web, [SearxngEngine(web.base + "/searxng")], pool=app.pool).cache
    assert cache.lookup(user, "a" * 64, "postgres 18 release") is None  # a miss: claimed
    assert cache.lookup(user, "a" * 64, "postgres 18 release") is None  # a search still running: no answer yet
    assert _count_cache(database_url, user) == 1
    cache.release(user, "a" * 64)
    assert _count_cache(database_url, user) == 0


def test_a_user_forgotten_while_search_web_runs_keeps_no_cache_row(app, database_url, monkeypatch):
    """`memctx search-web` (no conversation: its answer hangs off none) against an engine on loopback
    that forgets the user (as `DELETE /v1/me` does) before it answers: the answer is printed, and
    nothing of the user is cached."""
    from typer.testing import CliRunner

    from memctx.cli import app as cli
    from test_api_faults import _InterruptingEngine

    engine = _InterruptingEngine([{"title": "Harbour news", "url": "http://127.0.0.1:9/harbour",
                                   "content": "The harbour reopens on Monday."}])
    user = uuid.uuid4()
    engine.before = lambda: app.store.forget_user(user)
    for name, value in (("MEMCTX_DATABASE_URL", database_url), ("MEMCTX_WEB_ENGINES", "searxng"),
                        ("MEMCTX_SEARXNG_URL", engine.url), ("MEMCTX_WEB_ALLOW_PRIVATE", "true")):
        monkeypatch.setenv(name, value)
    try:
        result = CliRunner().invoke(cli, ["search-web", "latest harbour news", "--force", "--json",
                                          "--user", str(user)])
    finally:
        engine.server.shutdown()
        engine.server.server_close()
    assert result.exit_code == 0, result.output
    assert [r["text"] for r in json.loads(result.stdout)["results"]] == ["The harbour reopens on Monday."]
    assert _count_cache(database_url, user) == 0, "a row of the forgotten user was cached"


def _settings(database_url, web, **kw) -> Settings:
    return Settings(database_url=database_url, pool_min_size=1, pool_max_size=4, web_engines=["searxng"],
                    searxng_url=web.base + "/searxng", web_allow_private=True, **kw)


def _conversation(memctx_app, user):
    conv = memctx_app.store.create_conversation(user)
    memctx_app.store.append_messages(user, conv.id, [
        NewMessage.build("user", "We should move the analytics jobs to a new database.", metadata={"speaker": "Ana"}),
        NewMessage.build("assistant", "Postgres would fit, it handles the reporting queries well.",
                         metadata={"speaker": "Ben"})])
    return conv


@pytest.mark.parametrize("budget", [300, 800, 2000])
def test_a_context_puts_web_results_first_within_budget_with_sources(web, database_url, embedder, budget):
    user = uuid.uuid4()
    with open_app(_settings(database_url, web), embedder=embedder) as memctx_app:
        conv = _conversation(memctx_app, user)
        wc = get_working_context(memctx_app, conv.id, "What is new in the latest PostgreSQL release?", budget,
                                 user=user)
    assert wc.tokens == messages_tokens(memctx_app.counter, wc.messages) <= budget
    assert sum(s.tokens for s in wc.sections) + 3 == wc.tokens
    external = next(s for s in wc.sections if s.name == "external")
    assert 0 < external.tokens <= external.budget
    assert wc.messages[1]["content"].startswith("External search results:")  # first after the system prompt
    web_sources = [s for s in wc.sources if s.kind == "external"]
    assert web_sources and wc.sources[:len(web_sources)] == web_sources
    for source in web_sources:
        assert source.url.startswith(web.base) and f"({source.url})" in wc.messages[1]["content"]
        assert source.as_json()["url"] == source.url
    assert "external" in wc.timings_ms and wc.as_json()["external_search"]["decision"]["search"]


def test_no_search_when_the_rules_say_no_and_a_failing_engine_never_fails_the_context(web, database_url, embedder):
    user = uuid.uuid4()
    with open_app(_settings(database_url, web), embedder=embedder) as memctx_app:
        conv = _conversation(memctx_app, user)
        quiet = get_working_context(memctx_app, conv.id, "Which database did Ben suggest?", 800, user=user)
    assert quiet.external is not None and not quiet.external.decision.search
    assert not [s for s in quiet.sources if s.kind == "external"]
    with open_app(_settings(database_url, web).model_copy(update={"searxng_url": web.base + "/broken"}),
                  embedder=embedder) as memctx_app:
        wc = get_working_context(memctx_app, conv.id, "What is new in the latest PostgreSQL release?", 800, user=user)
    assert wc.external.failed and "502" in wc.external.errors[0]
    assert not [s for s in wc.sources if s.kind == "external"] and wc.messages[-1]["role"] == "user"


def test_users_share_one_web_search_and_keep_their_own_cache(web, database_url, embedder):
    """Engines, fetcher and HTTP clients are built once per App, not once per user it serves."""
    from memctx.assemble import assembler_for

    with open_app(_settings(database_url, web), embedder=embedder) as memctx_app:
        alice, bob = (assembler_for(memctx_app.for_user(uuid.uuid4())).external for _ in range(2))
        assert alice.chain is bob.chain is memctx_app.web.chain and alice.fetcher is bob.fetcher
        assert alice.cache.pool is not bob.cache.pool  # each user's cache rows under their own RLS


def test_off_by_default(app):
    assert app.settings.web_engines == [] and WebSearch.from_settings(app.settings, app.counter) is None


def test_search_web_cli_prints_the_decision_engine_and_cleaned_text(web, monkeypatch):
    from typer.testing import CliRunner

    from memctx.cli import app as cli

    monkeypatch.setenv("MEMCTX_WEB_ENGINES", "searxng")
    monkeypatch.setenv("MEMCTX_SEARXNG_URL", web.base + "/searxng")
    monkeypatch.setenv("MEMCTX_WEB_ALLOW_PRIVATE", "true")
    result = CliRunner().invoke(cli, ["search-web", "What is new in the latest PostgreSQL release?", "--no-cache",
                                      "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["decision"]["search"] and "temporal 'latest'" in report["decision"]["reason"]
    assert report["engine"] == "searxng" and "virtual generated columns" in report["results"][0]["text"]
    text = CliRunner().invoke(cli, ["search-web", "thanks, that helps", "--no-cache"])
    assert text.exit_code == 0 and text.stdout.startswith("decision: no search (keyword)")
