"""The MCP tools through the official MCP client, over both transports: stdio (`memctx mcp` as a
subprocess, the user from MEMCTX_API_KEY) and streamable HTTP (`/mcp` of the API app on a real
uvicorn server, the user from each request's bearer key). One summarized conversation of Alice's;
Bob, a second user, gets nothing of it; bad arguments are tool errors, never a crash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, AsyncIterator

import anyio
import httpx
import pytest
from mcp.client import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from api_support import api_key
from memctx.mcp_tools.server import NOTHING_BOUND
from memctx.models import NewMessage
from memctx.pipeline.catchup import catch_up

MEMCTX = str(Path(sys.executable).with_name("memctx"))
TOOLS = {"search_conversation_history", "get_conversation_summary", "recall_context", "get_working_context",
         "add_message", "web_search", "get_user_profile", "correct_user_profile", "rate_context_item"}
TURNS = [("user", "I am planning a trip to Lisbon with my brother Tomas in May."),
         ("assistant", "Sounds great! Where will you stay?"),
         ("user", "We booked a small flat in Alfama near the castle."),
         ("assistant", "Alfama is lovely at night."),
         ("user", "Remind me to buy the tram tickets on Friday."),
         ("assistant", "Noted: buy the tram tickets on Friday."),
         ("user", "Please always answer me in short sentences."),
         ("assistant", "Understood, short answers from now on."),
         ("user", "I ordered a guidebook from the shop on Rua Augusta."),
         ("assistant", "A guidebook will help with the museums."),
         ("user", "Should we visit Sintra as well?"),
         ("assistant", "Sintra is a fine day trip by train.")]


class Tenant:
    """A user with an API key; `conv` is their summarized conversation `paint`, if stored."""

    def __init__(self, app, with_conversation: bool) -> None:
        self.user = uuid.uuid4()
        self.key = api_key(app, self.user)
        self.conv = None
        if with_conversation:
            mine = app.for_user(self.user)
            self.conv = mine.store.create_conversation(self.user, external_id="paint")
            mine.store.append_messages(self.user, self.conv.id, [
                NewMessage.build(role, text, external_id=f"m{i}", metadata={"speaker": "Mia" if role == "user" else "Bot"})
                for i, (role, text) in enumerate(TURNS)])
            # one summary level under a master, so that twelve turns already make one
            catch_up(replace(mine, settings=mine.settings.model_copy(update={"max_sum_lvl": 1})), self.user,
                     self.conv.id, force_board=True)


@pytest.fixture
def alice(app) -> Tenant:
    return Tenant(app, with_conversation=True)


@pytest.fixture
def bob(app) -> Tenant:
    return Tenant(app, with_conversation=False)


@asynccontextmanager
async def _stdio(database_url: str, key: str, conversation: str | None,
                 env: dict[str, str] | None = None, errors: Path | None = None) -> AsyncIterator[ClientSession]:
    env = {"MEMCTX_DATABASE_URL": database_url, "MEMCTX_API_KEY": key, "MEMCTX_CONVERSATION": conversation or "",
           **(env or {})}
    params = StdioServerParameters(command=MEMCTX, args=["mcp"], env=env)
    with open(errors or os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def _http(base_url: str, key: str, conversation: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}", **({"X-Memctx-Conversation": conversation} if conversation else {})}
    async with create_mcp_http_client(headers=headers) as http, \
            streamable_http_client(f"{base_url}/mcp", http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


@pytest.fixture(params=["stdio", "http"])
def connect(request, database_url):
    """connect(key, conversation) → an async context manager yielding an initialized ClientSession."""
    if request.param == "stdio":
        return lambda key, conversation=None: _stdio(database_url, key, conversation)
    base_url = request.getfixturevalue("api_server")
    return lambda key, conversation=None: _http(base_url, key, conversation)


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def refused(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, result.content
    return result.content[0].text


def test_lists_the_tools_with_descriptions_and_no_user_argument(connect, alice):
    async def scenario():
        async with connect(alice.key) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert len(tool.description) > 100
            assert not {"user", "user_id"} & set(tool.input_schema["properties"])
        search = tools["search_conversation_history"].input_schema
        assert search["required"] == ["query"] and search["properties"]["limit"]["default"] == 5
        assert search["properties"]["time_range"]["enum"] == ["today", "week", "month", "all"]
        assert tools["recall_context"].input_schema["properties"]["context_type"]["enum"] == [
            "action_items", "questions", "facts", "entities", "constraints"]

    anyio.run(scenario)


def test_each_tool_on_the_bound_conversation(connect, alice, app):
    async def scenario():
        async with connect(alice.key, "paint") as session:
            found = await call(session, "search_conversation_history", query="guidebook shop", time_range="today")
            top = found["memories"][0]
            assert top["conversation"] == "paint" and top["conversation_id"] == str(alice.conv.id)
            said = {s["message_id"]: s for m in found["memories"] for s in m["said"]}
            assert said["m8"]["speaker"] == "Mia" and said["m8"]["date"].startswith(str(alice.conv.created_at.year))
            assert "Rua Augusta" in said["m8"]["text"]
            assert len(found["memories"]) <= 5

            summary = await call(session, "get_conversation_summary")
            assert summary["conversation"] == "paint" and "Lisbon" in summary["summary"]
            facts = [f for person in summary["key_facts"].values() for f in person]
            assert any("Alfama" in f["text"] and f["sources"][0]["external_id"] == "m2" for f in facts)
            assert summary["master_summary"]["text"] and summary["master_summary"]["first_seq"] == 1

            actions = await call(session, "recall_context", context_type="action_items")
            assert any("Friday" in a["text"] for a in actions["items"])
            assert all(a["sources"] for a in actions["items"])
            people = (await call(session, "recall_context", context_type="entities"))["items"]["people"]
            assert "Tomas" in [p["text"] for p in people]
            for context_type in ("questions", "facts", "constraints"):
                assert (await call(session, "recall_context", context_type=context_type))["context_type"] == context_type

            wc = await call(session, "get_working_context", query="When do I buy the tram tickets?", token_budget=500)
            assert wc["tokens"] <= 500 and wc["messages"][-1]["content"] == "When do I buy the tram tickets?"
            assert {s["kind"] for s in wc["sources"]} >= {"message"}

            added = await call(session, "add_message", role="user",
                               content=[{"type": "text", "text": "The flat has a view of the river."}])
            assert added["conversation"] == "paint" and added["seq"] == len(TURNS) + 1
            found = await call(session, "search_conversation_history", query="flat with a view of the river", limit=1)
            assert found["memories"][0]["said"][-1]["id"] == added["id"]

    anyio.run(scenario)


def test_nothing_bound_is_one_sentence_and_an_argument_names_the_conversation(connect, alice):
    async def scenario():
        async with connect(alice.key) as session:
            message = await refused(session, "get_conversation_summary")
            assert message.endswith(NOTHING_BOUND) and NOTHING_BOUND.count(". ") == 0
            assert "No conversation is bound" in await refused(session, "add_message", role="user", content="hi")
            named = await call(session, "recall_context", context_type="facts", conversation_id=str(alice.conv.id))
            assert named["conversation"] == "paint" and named["items"]

    anyio.run(scenario)


def test_a_second_user_gets_nothing_of_the_first(connect, alice, bob, app):
    async def scenario():
        unknown = str(uuid.uuid4())
        async with connect(bob.key) as session:
            assert (await call(session, "search_conversation_history", query="guidebook Rua Augusta Alfama"))["memories"] == []
            for tool, args in (("get_conversation_summary", {}), ("recall_context", {"context_type": "facts"}),
                               ("get_working_context", {"query": "tickets?", "token_budget": 500})):
                theirs = await refused(session, tool, conversation_id=str(alice.conv.id), **args)
                nobodys = await refused(session, tool, conversation_id=unknown, **args)
                assert theirs.replace(str(alice.conv.id), "X") == nobodys.replace(unknown, "X")
        async with connect(bob.key, str(alice.conv.id)) as session:  # bound to Alice's conversation
            theirs = await refused(session, "recall_context", context_type="facts")
            assert theirs.endswith(f": unknown conversation {alice.conv.id}")
            # an unknown conversation id never becomes a new conversation (of Bob's, named after Alice's id)
            assert (await refused(session, "add_message", role="user", content="mine")).endswith(
                f"unknown conversation {alice.conv.id}")
        assert app.store.get_conversation(alice.user, alice.conv.id).message_count == len(TURNS)
        assert app.store.list_conversations(bob.user) == []

    anyio.run(scenario)


BAD = [("search_conversation_history", {"query": "a\x00b"}, "NUL"),
       ("search_conversation_history", {"query": ""}, "query is empty"),
       ("search_conversation_history", {"query": " \n "}, "query is empty"),
       ("get_working_context", {"query": "  ", "token_budget": 500}, "query is empty"),
       ("web_search", {"query": ""}, "query is empty"),
       ("search_conversation_history", {"query": "trip", "time_range": "yesterday"}, "time_range"),
       ("search_conversation_history", {"query": "trip", "limit": 10**9}, "limit"),
       ("search_conversation_history", {"query": "trip", "limit": 0}, "limit"),
       ("search_conversation_history", {"query": 5}, "query"),
       ("recall_context", {"context_type": "secrets"}, "context_type"),
       ("recall_context", {"context_type": "facts", "conversation_id": "pa\x00int"}, "NUL"),
       ("get_working_context", {"query": "x", "token_budget": 10**9}, "token_budget"),
       ("get_working_context", {"query": "x", "token_budget": -1}, "token_budget"),
       ("get_working_context", {"query": "x", "token_budget": 3}, "budget"),
       ("add_message", {"role": "root", "content": "hi"}, "role"),
       ("add_message", {"role": "user", "content": [{"type": "video"}]}, "video"),
       ("add_message", {"role": "user", "content": ""}, "content"),
       ("add_message", {"role": "user", "content": " ".join(map(str, range(10_000)))}, "tokens"),
       ("no_such_tool", {}, "no_such_tool")]


def test_bad_arguments_are_tool_errors_and_the_session_goes_on(connect, alice, app):
    async def scenario():
        async with connect(alice.key, "paint") as session:
            for tool, args, says in BAD:
                assert says in await refused(session, tool, **args), (tool, args)
            assert (await call(session, "recall_context", context_type="facts"))["items"]
        assert app.store.get_conversation(alice.user, alice.conv.id).message_count == len(TURNS)

    anyio.run(scenario)


def test_http_refuses_a_missing_or_bad_credential(api_server):
    for headers in ({}, {"Authorization": "Bearer mck_nope"}, {"Authorization": "Bearer not.a.jwt"}):
        r = httpx.post(f"{api_server}/mcp", headers={**headers, "Accept": "application/json, text/event-stream"},
                       json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"


def test_http_keeps_a_session_with_the_user_who_opened_it(api_server, alice, bob):
    accept = {"Accept": "application/json, text/event-stream"}
    opened = httpx.post(f"{api_server}/mcp", headers={**accept, "Authorization": f"Bearer {alice.key}"}, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    session = opened.headers["mcp-session-id"]
    stolen = httpx.post(f"{api_server}/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                        headers={**accept, "Authorization": f"Bearer {bob.key}", "Mcp-Session-Id": session})
    assert opened.status_code == 200 and stolen.status_code == 404


def test_stdio_refuses_to_start_without_a_valid_key(database_url, alice):
    for key, says in (("", "MEMCTX_API_KEY is not set"), ("mck_nope", "MEMCTX_API_KEY is not a valid key")):
        done = subprocess.run([MEMCTX, "mcp"], env={**os.environ, "MEMCTX_DATABASE_URL": database_url,
                                                     "MEMCTX_API_KEY": key}, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr


def test_stdio_logs_one_json_object_a_line_on_stderr_and_no_query(database_url, alice, tmp_path):
    errors = tmp_path / "stderr"  # what an MCP client shows as the server's log

    async def scenario():
        async with _stdio(database_url, alice.key, "paint", env={"MEMCTX_LOG_LEVEL": "debug"}, errors=errors) as session:
            await call(session, "search_conversation_history", query="quokka sunrise watercolours")

    anyio.run(scenario)
    lines = [line for line in errors.read_text().splitlines() if line.strip()]
    assert lines  # at debug there is something to say
    for line in lines:
        record = json.loads(line)
        assert isinstance(record, dict) and record["level"] in ("debug", "info", "warning", "error"), line
    assert "quokka" not in errors.read_text()


def test_a_blank_query_is_refused_by_the_api_as_by_mcp(api_server, alice):
    auth = {"Authorization": f"Bearer {alice.key}"}
    for query in ("", "   "):
        searched = httpx.post(f"{api_server}/v1/search", headers=auth, json={"query": query})
        context = httpx.post(f"{api_server}/v1/conversations/paint/context", headers=auth,
                             json={"query": query, "token_budget": 500})
        for answer in (searched, context):
            assert answer.status_code == 422 and answer.json()["errors"][0]["loc"] == ["body", "query"], answer.text
    assert "query is empty" in searched.json()["detail"]


def test_stdio_without_a_migrated_database_says_so_in_one_line_and_stops_its_postgres(tmp_path, alice):
    home = tmp_path / "home"  # what an MCP client passes: no MEMCTX_HOME of the user's shell, a new one
    env = {"HOME": str(tmp_path), "PATH": os.environ["PATH"], "MEMCTX_HOME": str(home), "MEMCTX_API_KEY": alice.key}
    params = StdioServerParameters(command=MEMCTX, args=["mcp"], env=env)
    errors = tmp_path / "stderr"

    async def scenario():
        with errors.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                with anyio.fail_after(120):
                    await session.initialize()

    with pytest.raises(BaseException) as caught:
        anyio.run(scenario)
    assert not isinstance(caught.value, AssertionError)
    lines = [line for line in errors.read_text().splitlines() if line.strip()]
    assert len(lines) == 1, lines
    said = json.loads(lines[0])  # a JSON log line, as every line of the server is
    assert said["level"] == "error" and said["logger"] == "memctx.mcp"
    assert "not migrated" in said["msg"] and str(home) in said["msg"] and "MEMCTX_HOME" in said["msg"]
    status = subprocess.run([MEMCTX, "db", "status"], env=env, capture_output=True, text=True, timeout=60)
    assert "stopped" in status.stdout, status.stdout  # no orphan Postgres left behind
