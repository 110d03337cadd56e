"""The Brave Search API engine and the small LLM's yes or no, each against a loopback server that
speaks its protocol (tests/web_support.py): Brave's JSON with its key header, and an
OpenAI-compatible /v1/chat/completions whose reply is clear, polite, negative, garbage, broken or
too slow. Anything but a clear yes is no, and a slow model costs at most its timeout."""

from __future__ import annotations

import time
import uuid

import httpx
import pytest

from memctx.config import Settings
from memctx.web import EngineChain, WebSearch
from memctx.web.engines import BraveEngine, SearxngEngine
from memctx.web.slm import SmallLLM, web_search_prompt
from memctx.tokens import get_counter
from web_support import BRAVE_KEY, LoopbackWeb


@pytest.fixture(scope="module")
def web():
    server = LoopbackWeb()
    yield server
    server.close()


def _brave_url(web: LoopbackWeb) -> str:
    return web.base + "/brave/res/v1/web/search"


def test_brave_sends_its_key_and_parses_the_web_results(web):
    web.queries.clear()
    hits = BraveEngine(BRAVE_KEY, _brave_url(web)).search("postgres 18", 3)
    assert web.queries == ["postgres 18"]
    assert [h.url for h in hits] == [web.base + "/article/news", web.base + "/article/blog", web.base + "/pdf"]
    assert hits[0].title == "PostgreSQL 18 released with asynchronous I/O"  # <strong> removed
    assert hits[0].snippet.endswith("release of PostgreSQL 18 (count=3).")  # the count asked for was sent
    assert len(BraveEngine(BRAVE_KEY, _brave_url(web)).search("postgres 18", 1)) == 1
    with pytest.raises(httpx.HTTPStatusError, match="401"):
        BraveEngine("wrong-key", _brave_url(web)).search("postgres 18", 3)


def test_a_refused_brave_key_falls_back_and_a_configured_brave_searches_end_to_end(web):
    answer = EngineChain([BraveEngine("wrong-key", _brave_url(web)), SearxngEngine(web.base + "/searxng")]).search(
        "postgres 18", 3)
    assert answer.engine == "searxng" and "brave: HTTPStatusError" in answer.errors[0] and "401" in answer.errors[0]
    settings = Settings(web_engines=["brave"], brave_url=_brave_url(web), brave_api_key=BRAVE_KEY,
                        web_allow_private=True)
    search = WebSearch.from_settings(settings, get_counter("cl100k_base"))
    report = search.run("postgres 18 release", search.decide("What is new in the latest PostgreSQL release?"),
                        user=uuid.uuid4())
    assert report.engine == "brave" and report.decision.search and len(report.results) == 3
    assert report.results[0].fetched and "virtual generated columns" in report.results[0].text


@pytest.mark.parametrize(("model", "yes", "why"), [
    ("yes", True, "answered 'yes'"),
    ("yes-dot", True, "answered 'Yes.'"),
    ("no", False, "answered 'no', not a clear yes"),
    ("garbage", False, "not a clear yes"),
    ("yes-but", False, "answered 'yes, but only if it is recent', not a clear yes"),
    ("empty", False, "answered '', not a clear yes"),
    ("broken", False, "error (InternalServerError), so no"),
    ("not-json", False, "so no"),
    ("slow", False, "error (APITimeoutError), so no"),
])
def test_the_small_llm_says_yes_only_when_it_clearly_does(web, model, yes, why):
    slm = SmallLLM(model, base_url=web.base + "/v1", api_key="k", timeout_s=0.5)
    try:
        started = time.perf_counter()
        answer = slm("hows the weather looking for the match")
        elapsed = time.perf_counter() - started
    finally:
        slm.close()
    assert answer[0] is yes and why in answer[1], answer
    assert elapsed < 1.5  # a slow model costs its timeout, no retry
    sent = web.slm_requests[-1]
    assert sent["model"] == model and sent["messages"] == web_search_prompt("hows the weather looking for the match")
    assert sent["max_tokens"] == 3 and sent["temperature"] == 0


def test_the_decider_asks_the_small_llm_only_when_no_rule_fired(web):
    def search(model: str) -> WebSearch:
        return WebSearch.from_settings(Settings(web_engines=["searxng"], searxng_url=web.base + "/searxng",
                                                web_slm_model=model, web_slm_base_url=web.base + "/v1",
                                                web_slm_timeout_s=0.5), get_counter("cl100k_base"))

    web.slm_requests.clear()
    asked = search("yes").decide("hows the weather looking for the match")
    assert (asked.search, asked.by) == (True, "slm") and "small LLM: answered 'yes'" in asked.reason
    assert len(web.slm_requests) == 1
    keyword = search("no").decide("What is the latest PostgreSQL release?")
    assert (keyword.search, keyword.by) == (True, "keyword") and len(web.slm_requests) == 1  # not asked
    slow = search("slow").decide("hows the weather looking for the match")
    assert (slow.search, slow.by) == (False, "slm") and "APITimeoutError" in slow.reason
    assert not WebSearch.from_settings(Settings(web_engines=["searxng"], searxng_url=web.base + "/searxng"),
                                       get_counter("cl100k_base")).slm  # no model: the keyword decision stands
