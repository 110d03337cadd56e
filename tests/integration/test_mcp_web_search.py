"""The MCP `web_search` tool through the official MCP client, over stdio (`memctx mcp` as a
subprocess) and streamable HTTP (`/mcp` of the API on a real uvicorn server), against the loopback
web of tests/web_support.py. The agent asked, so the tool searches even when memctx's own rules
would not; the query is still anonymized, the answer cached per user, and with the private-address
allowance off the loopback pages are refused like any private address (only snippets come back)."""

from __future__ import annotations

import uuid
from typing import Iterator

import anyio
import pytest

from api_support import api_key, build_api, serve
from memctx.mcp_tools.server import NO_ENGINE
from memctx.app import App, open_app
from memctx.config import Settings
from memctx.models import NewMessage
from test_mcp_tools import _http, _stdio, call, refused
from web_support import LoopbackWeb


@pytest.fixture(scope="module")
def web() -> Iterator[LoopbackWeb]:
    server = LoopbackWeb()
    yield server
    server.close()


def _search_env(web: LoopbackWeb, allow_private: bool = True) -> dict[str, str]:
    return {"MEMCTX_WEB_ENGINES": "searxng", "MEMCTX_SEARXNG_URL": web.base + "/searxng",
            "MEMCTX_WEB_ALLOW_PRIVATE": str(allow_private).lower()}


@pytest.fixture
def search_app(database_url, embedder, web) -> Iterator[App]:
    """An app with the loopback SearXNG configured (and the loopback allowance on)."""
    settings = Settings(database_url=database_url, pool_min_size=1, pool_max_size=4, web_engines=["searxng"],
                        searxng_url=web.base + "/searxng", web_allow_private=True)
    with open_app(settings, embedder=embedder) as memctx_app:
        yield memctx_app


def _mia(app: App) -> tuple[uuid.UUID, str]:
    """A user with a key and a conversation `trip` in which Mia speaks; (user, key)."""
    user = uuid.uuid4()
    mine = app.for_user(user)
    conv = mine.store.create_conversation(user, external_id="trip")
    mine.store.append_messages(user, conv.id, [
        NewMessage.build("user", "I want a laptop for the trip.", metadata={"speaker": "Mia"}),
        NewMessage.build("assistant", "How much do you want to spend?", metadata={"speaker": "Bot"})])
    return user, api_key(app, user)


@pytest.fixture(params=["stdio", "http"])
def connect(request, database_url, search_app, web):
    """connect(key, conversation) → a session with the loopback search configured, over either transport."""
    if request.param == "stdio":
        return lambda key, conversation=None: _stdio(database_url, key, conversation, _search_env(web))
    base_url = request.getfixturevalue("search_api")
    return lambda key, conversation=None: _http(base_url, key, conversation)


@pytest.fixture
def search_api(search_app) -> Iterator[str]:
    with serve(build_api(search_app, search_app.settings)) as base_url:
        yield base_url


def test_web_search_is_forced_anonymized_cached_and_cites_urls(connect, search_app, web):
    user, key = _mia(search_app)

    async def scenario():
        web.queries.clear()
        async with connect(key, "trip") as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            schema = tools["web_search"].input_schema
            assert schema["required"] == ["query"] and "current or outside knowledge" in tools["web_search"].description
            found = await call(session, "web_search", query="thanks, Mia, mia@example.org wants 3 laptops")
            assert not found["decision"]["search"] and found["decision"]["by"] == "keyword"  # the rules say no...
            assert found["engine"] == "searxng" and len(found["results"]) == 3  # ...and it searches anyway
            assert found["query_sent"] == web.queries[-1] == "thanks,, wants 3 laptops"
            news, blog, pdf = found["results"]
            assert news["url"] == web.base + "/article/news" and news["page_fetched"]
            assert "virtual generated columns" in news["text"] and "cookies" not in news["text"]
            assert not pdf["page_fetched"] and any("not HTML" in e for e in found["errors"])
            again = await call(session, "web_search", query="Thanks, Mia,  mia@example.org wants 3 laptops")
            assert again["cached"] and again["results"] == found["results"] and len(web.queries) == 1
            one = await call(session, "web_search", query="latest PostgreSQL release", max_results=1)
            assert one["decision"]["search"] and [r["title"] for r in one["results"]] == [news["title"]]
            for bad, says in (({"query": "a\x00b"}, "NUL"), ({"query": "x", "max_results": 11}, "max_results")):
                assert says in await refused(session, "web_search", **bad)
        assert search_app.store.forget_user(user)["search_cache"] == 2  # the caller's rows

    anyio.run(scenario)


def test_private_pages_are_refused_when_the_allowance_is_off(database_url, search_app, web):
    _, key = _mia(search_app)

    async def scenario():
        async with _stdio(database_url, key, None, _search_env(web, allow_private=False)) as session:
            found = await call(session, "web_search", query="postgres 18 release")
        assert found["engine"] == "searxng" and not any(r["page_fetched"] for r in found["results"])
        assert found["results"][0]["text"].startswith("The PostgreSQL Global")  # the engine's snippet, not the page
        assert all("non-public" in e for e in found["errors"])

    anyio.run(scenario)


def test_without_an_engine_it_says_so_in_one_sentence(database_url, app):
    _, key = _mia(app)

    async def scenario():
        async with _stdio(database_url, key, "trip") as session:
            message = await refused(session, "web_search", query="latest PostgreSQL release")
        assert message.endswith(NO_ENGINE) and NO_ENGINE.count(". ") == 0

    anyio.run(scenario)


@pytest.mark.parametrize("bound", ["trip", None])
def test_a_user_forgotten_while_the_tool_searches_keeps_no_cache_row(database_url, app, bound):
    """The user forgotten (`memctx forget-user`, as `DELETE /v1/me` does) while `web_search` over
    stdio waits for the engine, in a bound conversation and in none (its answer then hangs off no
    conversation): the answer still comes back, and nothing of the user is cached."""
    from test_api_faults import _InterruptingEngine

    engine = _InterruptingEngine([{"title": "Harbour news", "url": "http://127.0.0.1:9/harbour",
                                   "content": "The harbour reopens on Monday."}])
    user, key = _mia(app)
    engine.before = lambda: app.store.forget_user(user)
    env = {"MEMCTX_WEB_ENGINES": "searxng", "MEMCTX_SEARXNG_URL": engine.url, "MEMCTX_WEB_ALLOW_PRIVATE": "true"}

    async def scenario():
        async with _stdio(database_url, key, bound, env) as session:
            found = await call(session, "web_search", query="latest harbour news")
            assert [r["text"] for r in found["results"]] == ["The harbour reopens on Monday."]

    try:
        anyio.run(scenario)
    finally:
        engine.server.shutdown()
        engine.server.server_close()
    assert app.store.forget_user(user)["search_cache"] == 0
