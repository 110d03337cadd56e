"""One memory behind every door: the Python call, the HTTP API and the MCP tools (the official
client over streamable HTTP) know the moment they are asked and draw on the user's other
conversations by default; a memory of another conversation names it. (The proxy's own cases are
in test_api_proxy.py.)

The diary: entries dated around the weekend before today, in the user's conversation "diary",
and "What did I do last weekend?" asked in a new conversation with no moment given. Last
weekend's kayaking and stew must be the context's most relevant memories; a fence painted "last
weekend" two weeks earlier, which shares the words, must not come before them.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone

import anyio
import pytest
from mcp.client import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from api_support import client
from memctx.assemble import get_working_context
from memctx.assemble.render import MEMORY_HEADER
from memctx.models import NewMessage
from support import DIARY_ASK, FENCE, KAYAK, STEW, diary_days, fence_first, weekend_first, write_diary

BUDGET = 300


def _today():
    return datetime.now(timezone.utc).date()


def _memories(messages) -> str:
    return next((m["content"] for m in messages if m["content"].startswith("Relevant memories")), "")


def _said_where(memories: str) -> None:
    """A memory section of the diary's entries names the diary and never 'this conversation'."""
    assert "earlier in the conversation" not in memories and MEMORY_HEADER not in memories
    kayak_day = diary_days(_today())[KAYAK]
    assert f'[{kayak_day.day} {kayak_day:%B %Y}, conversation "diary"]' in memories, memories


def _mcp(base_url: str, key: str, tool: str, **arguments):
    """One tool call through the official MCP client over streamable HTTP: its JSON result."""
    async def scenario():
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http, \
                streamable_http_client(f"{base_url}/mcp", http_client=http) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool(tool, arguments)
        assert not result.is_error, result.content[0].text
        return json.loads(result.content[0].text)

    return anyio.run(scenario)


@pytest.fixture
def diarist(app):
    user = uuid.uuid4()
    write_diary(app, user, _today())
    asked = app.store.create_conversation(user, external_id="today")
    return user, asked


def test_the_python_call_knows_today_and_the_users_other_conversations(app, diarist):
    user, asked = diarist
    wc = get_working_context(app, asked.id, DIARY_ASK, BUDGET, user=user)
    memories = _memories(wc.messages)
    assert weekend_first(memories), memories
    _said_where(memories)
    assert wc.today == _today() and wc.messages[0]["content"].endswith(f"{_today():%A}, {_today().day} "
                                                                        f"{_today():%B %Y}.")
    # Asked two weeks ago, "last weekend" is the fence's.
    then = datetime.combine(diary_days(_today())[FENCE], datetime.min.time(), timezone.utc) + timedelta(days=7)
    past = _memories(get_working_context(app, asked.id, DIARY_ASK, BUDGET, user=user, now=then).messages)
    assert fence_first(past), past
    # Only this conversation: nothing of the diary.
    alone = get_working_context(app, asked.id, DIARY_ASK, BUDGET, user=user, scope="conversation")
    assert _memories(alone.messages) == "" and alone.today is None


def test_the_http_context_and_search_know_today_and_the_users_other_conversations(app, api_server, api_key_for,
                                                                                  diarist):
    user, _ = diarist
    with client(api_server, api_key_for(user)) as http:
        answer = http.post("/v1/conversations/today/context", json={"query": DIARY_ASK, "token_budget": BUDGET})
        assert answer.status_code == 200, answer.text
        memories = _memories(answer.json()["messages"])
        assert weekend_first(memories), memories
        _said_where(memories)
        assert answer.json()["today"] == _today().isoformat()
        found = http.post("/v1/search", json={"query": DIARY_ASK, "limit": 4}).json()["memories"]
        assert {f["text"] for m in found[:2] for f in m["fragments"]} == {KAYAK, STEW}
        # as_of: the moment of a replay
        fence_week = diary_days(_today())[FENCE] + timedelta(days=7)
        past = http.post("/v1/conversations/today/context", json={
            "query": DIARY_ASK, "token_budget": BUDGET, "as_of": f"{fence_week.isoformat()}T09:00:00Z"}).json()
        assert fence_first(_memories(past["messages"])) and past["today"] == fence_week.isoformat()
        alone = http.post("/v1/conversations/today/context",
                          json={"query": DIARY_ASK, "token_budget": BUDGET, "scope": "conversation"}).json()
        assert _memories(alone["messages"]) == ""


def test_the_mcp_tools_know_today_and_the_users_other_conversations(app, api_server, api_key_for, diarist):
    user, asked = diarist
    key = api_key_for(user)
    wc = _mcp(api_server, key, "get_working_context", query=DIARY_ASK, token_budget=BUDGET, conversation_id="today")
    memories = _memories(wc["messages"])
    assert weekend_first(memories), memories
    _said_where(memories)
    assert wc["today"] == _today().isoformat()
    found = _mcp(api_server, key, "search_conversation_history", query=DIARY_ASK, limit=4)["memories"]
    assert {s["text"] for m in found[:2] for s in m["said"]} == {KAYAK, STEW}
    fence_week = diary_days(_today())[FENCE] + timedelta(days=7)
    past = _mcp(api_server, key, "get_working_context", query=DIARY_ASK, token_budget=BUDGET, conversation_id="today",
                as_of=f"{fence_week.isoformat()}T09:00:00+00:00")
    assert fence_first(_memories(past["messages"]))
    alone = _mcp(api_server, key, "get_working_context", query=DIARY_ASK, token_budget=BUDGET,
                 conversation_id="today", scope="conversation")
    assert _memories(alone["messages"]) == ""


def test_a_short_conversation_with_no_relevant_past_gets_exactly_its_history(app, diarist):
    user, _ = diarist
    chat = app.store.create_conversation(user, external_id="spanish")
    turns = [("user", "How do you say 'good morning' in Spanish?"), ("assistant", "Buenos días.")]
    app.store.append_messages(user, chat.id, [NewMessage.build(role, text) for role, text in turns])
    query = "And how do I say 'thank you very much'?"
    wc = get_working_context(app, chat.id, query, 2000, user=user, system_prompt="")
    assert wc.messages == [*({"role": r, "content": t} for r, t in turns), {"role": "user", "content": query}]
    assert wc.today is None and wc.sources and all(s.section == "current" for s in wc.sources)


def test_small_talk_in_a_new_conversation_brings_no_memories(app, diarist):
    """A greeting shares no word with the diary and means nothing near it: the new conversation's
    context is the greeting alone, with no system message."""
    user, asked = diarist
    wc = get_working_context(app, asked.id, "Hello! How are you today?", 2000, user=user, system_prompt="")
    assert wc.messages == [{"role": "user", "content": "Hello! How are you today?"}] and wc.today is None
