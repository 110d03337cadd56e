"""The OpenAI-compatible proxy, driven by the real `openai` client against a real uvicorn server,
whose upstream is a real OpenAI-compatible HTTP server on loopback that records what it receives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import openai
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from api_support import build_api, serve
from memctx.config import Settings
from memctx.models import NewMessage
from memctx.tokens import messages_tokens
from support import DIARY_ASK, TRIP, row_counts, weekend_first, write_diary

ROOT = Path(__file__).resolve().parents[2]
CALL = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}
PIECES = ["Your cat ", "is called ", "Miso."]


def _upstream_app(received: list[dict]) -> FastAPI:
    """An OpenAI-compatible server: model `fake-error` answers 429, `fake-500` always 500,
    `fake-500-twice` 500 to the test's first two calls, `fake-tools` a tool call, any other a text
    reply; `stream: true` answers in SSE chunks."""
    upstream = FastAPI()

    @upstream.get("/v1/models")
    def models():
        return {"object": "list", "data": [{"id": "fake-model", "object": "model", "created": 0, "owned_by": "test"}]}

    @upstream.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        received.append({"body": body, "authorization": request.headers.get("authorization")})
        n = len(received)
        if body["model"] == "fake-500" or (body["model"] == "fake-500-twice" and n <= 2):
            return JSONResponse({"error": {"message": "upstream trouble", "type": "server_error"}}, status_code=500)
        if body["model"] == "fake-error":
            return JSONResponse({"error": {"message": "slow down", "type": "rate_limit_error", "code": "rate_limited"}},
                                status_code=429)
        tools = body["model"] == "fake-tools"
        if body.get("stream"):
            head = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 1, "model": body["model"]}
            deltas = ([{"role": "assistant", "tool_calls": [{"index": 0, **CALL}]}] if tools
                      else [{"role": "assistant", "content": p} for p in PIECES])

            def events():
                for i, delta in enumerate(deltas):
                    last = i == len(deltas) - 1
                    yield "data: " + json.dumps({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": (
                        "tool_calls" if tools else "stop") if last else None}]}) + "\n\n"
                yield "data: [DONE]\n\n"

            return StreamingResponse(events(), media_type="text/event-stream")
        message = ({"role": "assistant", "content": None, "tool_calls": [CALL]} if tools
                   else {"role": "assistant", "content": "".join(PIECES)})
        return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1, "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tools else "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                "upstream_only_field": "kept"}

    return upstream


@pytest.fixture(scope="module")
def upstream():
    received: list[dict] = []
    with serve(_upstream_app(received)) as url:
        yield url, received


@pytest.fixture
def received(upstream):
    upstream[1].clear()
    return upstream[1]


@pytest.fixture
def settings(database_url, upstream):
    return Settings(database_url=database_url, pool_min_size=1, pool_max_size=4, upstream_base_url=upstream[0] + "/v1",
                    upstream_api_key="upstream-secret",
                    proxy_token_budgets={"fake-model": 1500, "small-model": 300, "fake-500-twice": 600})


@pytest.fixture
def alice():
    return uuid.uuid4()


@pytest.fixture
def client(api_server, api_key_for, alice):
    with openai.OpenAI(base_url=api_server + "/v1", api_key=api_key_for(alice), max_retries=0,
                       default_headers={"X-Memctx-Conversation": "chat-1"}) as alices:
        yield alices


def _stored(app, user, name="chat-1"):
    conv = app.store.find_conversation(user, name)
    return [(m.role, m.content) for m in app.store.list_messages(user, conv.id)]


def _text(blocks):
    return "\n".join(b.get("text", "") for b in blocks)


def test_the_working_context_replaces_the_history_and_the_turn_is_stored(client, received, app, alice):
    first = client.chat.completions.create(model="fake-model", temperature=0.3, messages=[
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "My cat is called Miso."}])
    assert first.choices[0].message.content == "Your cat is called Miso."
    second = client.chat.completions.create(model="fake-model", messages=[
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "My cat is called Miso."},
        {"role": "assistant", "content": "A HISTORY ONLY THE CLIENT HAS"}, {"role": "user", "content": "What is my cat called?"}])
    assert second.id == "chatcmpl-2"
    sent = received[1]["body"]
    assert sent["messages"][0]["role"] == "system" and sent["messages"][0]["content"].startswith("Be brief.")
    assert sent["messages"][-1] == {"role": "user", "content": "What is my cat called?"}
    history = json.dumps(sent["messages"])
    assert "A HISTORY ONLY THE CLIENT HAS" not in history  # replaced by memory ...
    assert "My cat is called Miso." in history  # ... which holds the stored first turn
    assert received[0]["body"]["temperature"] == 0.3  # the caller's parameters pass through
    assert received[0]["authorization"] == "Bearer upstream-secret"  # never the caller's memctx key
    assert [(role, _text(blocks)) for role, blocks in _stored(app, alice)] == [
        ("user", "My cat is called Miso."), ("assistant", "Your cat is called Miso."),
        ("user", "What is my cat called?"), ("assistant", "Your cat is called Miso.")]


def test_the_upstream_response_comes_back_unchanged_and_the_call_is_logged(api_server, api_key_for, received, app, alice):
    with httpx.Client(base_url=api_server, headers={"Authorization": f"Bearer {api_key_for(alice)}"}) as http:
        answer = http.post("/v1/chat/completions", json={
            "model": "fake-model", "messages": [{"role": "user", "content": "hi"}],
            "metadata": {"memctx_conversation": "by-metadata", "trace": "t1"}})
    assert answer.status_code == 200
    assert answer.json()["upstream_only_field"] == "kept"
    assert received[0]["body"]["metadata"] == {"trace": "t1"}  # memctx's own key is not passed on
    with app.pool.connection() as conn:
        log = conn.execute("select kind, model, token_budget, tokens_used, upstream_status, timings_ms "
                           "from memctx.context_requests").fetchall()
    assert [(r["kind"], r["model"], r["token_budget"], r["upstream_status"]) for r in log] == [
        ("proxy", "fake-model", 1500, 200)]
    assert log[0]["tokens_used"] > 0 and log[0]["timings_ms"]["upstream"] > 0
    assert [role for role, _ in _stored(app, alice, "by-metadata")] == ["user", "assistant"]


def test_streaming_passes_the_chunks_through_and_stores_the_reply(client, received, app, alice):
    stream = client.chat.completions.create(model="fake-model", stream=True,
                                            messages=[{"role": "user", "content": "What is my cat called?"}])
    pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert pieces == PIECES
    assert received[0]["body"]["stream"] is True
    assert [(role, _text(blocks)) for role, blocks in _stored(app, alice)] == [
        ("user", "What is my cat called?"), ("assistant", "Your cat is called Miso.")]


@pytest.mark.parametrize("stream", [False, True])
def test_tool_calls_are_stored_as_blocks_and_the_tool_loop_reaches_the_upstream(client, received, app, alice, stream):
    ask = {"role": "user", "content": "Weather in Oslo?"}
    first = client.chat.completions.create(model="fake-tools", messages=[ask], stream=stream)
    calls = ([c.choices[0].delta.tool_calls[0] for c in first if c.choices and c.choices[0].delta.tool_calls]
             if stream else first.choices[0].message.tool_calls)
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [("call_1", "weather", '{"city": "Oslo"}')]
    loop = [{"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "12 degrees"}]
    client.chat.completions.create(model="fake-model", messages=[ask, *loop])
    assert received[1]["body"]["messages"][-3:] == [ask, *loop]
    assert _stored(app, alice) == [
        ("user", [{"type": "text", "text": "Weather in Oslo?"}]),
        ("assistant", [{"type": "tool_call", "id": "call_1", "name": "weather", "arguments": '{"city": "Oslo"}'}]),
        ("tool", [{"type": "tool_result", "content": "12 degrees", "tool_call_id": "call_1"}]),
        ("assistant", [{"type": "text", "text": "Your cat is called Miso."}])]


@pytest.mark.parametrize("stream", [False, True])
def test_an_upstream_error_comes_back_as_it_is_and_stores_nothing(client, received, app, alice, stream):
    for _ in range(2):  # a retry with the same Idempotency-Key
        with pytest.raises(openai.RateLimitError) as caught:
            client.chat.completions.create(model="fake-error", stream=stream, messages=[{"role": "user", "content": "hello?"}],
                                           extra_headers={"Idempotency-Key": "retry-1"})
        assert caught.value.status_code == 429
        assert caught.value.body == {"message": "slow down", "type": "rate_limit_error", "code": "rate_limited"}
    assert len(received) == 2
    assert [m["content"] for m in received[1]["body"]["messages"]] == ["hello?"]  # the turn once, no prompt added
    assert _stored(app, alice) == []  # no turn without its reply


def test_an_idempotency_key_retry_stores_nothing_twice_and_gets_the_stored_reply(client, received, app, alice):
    ask = dict(model="fake-model", messages=[{"role": "user", "content": "Remember: the code is 4411."}],
               extra_headers={"Idempotency-Key": "k-42"})
    first = client.chat.completions.create(**ask)
    again = client.chat.completions.create(**ask)
    streamed = client.chat.completions.create(**ask, stream=True)
    assert again.id == first.id and again.choices[0].message.content == first.choices[0].message.content
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == first.choices[0].message.content
    assert len(received) == 1
    assert [role for role, _ in _stored(app, alice)] == ["user", "assistant"]
    with pytest.raises(openai.UnprocessableEntityError):  # the same key for another request
        client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "something else"}],
                                       extra_headers={"Idempotency-Key": "k-42"})


def test_another_users_conversation_is_not_found_and_untouched(client, api_server, api_key_for, received, app, alice):
    client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "alice's secret"}])
    alices = app.store.find_conversation(alice, "chat-1").id
    mallorys_key = api_key_for(uuid.uuid4())
    with app.pool.connection() as conn:
        before = row_counts(conn)
    with openai.OpenAI(base_url=api_server + "/v1", api_key=mallorys_key, max_retries=0) as mallory:
        for stream in (False, True):
            with pytest.raises(openai.NotFoundError):
                mallory.chat.completions.create(model="fake-model", stream=stream,
                                                messages=[{"role": "user", "content": "hi"}],
                                                extra_headers={"X-Memctx-Conversation": str(alices)})
    with app.pool.connection() as conn:
        assert row_counts(conn) == before
    assert len(received) == 1
    with openai.OpenAI(base_url=api_server + "/v1", api_key="not-a-key", max_retries=0) as anonymous:
        with pytest.raises(openai.AuthenticationError):
            anonymous.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "hi"}],
                                              extra_headers={"X-Memctx-Conversation": "x"})


def test_models_are_passed_through(client):
    assert [m.id for m in client.models.list()] == ["fake-model"]


def test_the_readme_example_runs_against_the_proxy(api_server, api_key_for, received, app, alice):
    example = ROOT / "docs" / "examples" / "proxy.py"
    for page in ("README.md", "docs/PROXY.md"):  # both show the example this test runs
        assert example.read_text().split('"""', 2)[2].strip() in (ROOT / page).read_text(), page
    env = {**os.environ, "MEMCTX_API_URL": api_server, "MEMCTX_API_KEY": api_key_for(alice)}
    out = subprocess.run([sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=120,
                         check=True)
    assert out.stdout.splitlines() == ["Your cat is called Miso."] * 2
    assert "My sister Ana lives in Porto." in json.dumps(received[1]["body"]["messages"])
    assert [role for role, _ in _stored(app, alice, "support-42")] == ["user", "assistant", "user", "assistant"]


@pytest.fixture
def retrying(api_server, api_key_for, alice):
    """Alice's official client with its default settings: two retries of a failed call, no key."""
    with openai.OpenAI(base_url=api_server + "/v1", api_key=api_key_for(alice),
                       default_headers={"X-Memctx-Conversation": "chat-1"}) as alices:
        yield alices


@pytest.mark.parametrize("stream", [False, True])
def test_the_clients_own_retries_store_the_turn_once(retrying, received, app, alice, stream):
    answer = retrying.chat.completions.create(model="fake-500-twice", stream=stream,
                                              messages=[{"role": "user", "content": "My cat is called Miso."}])
    text = ("".join(c.choices[0].delta.content or "" for c in answer if c.choices) if stream
            else answer.choices[0].message.content)
    assert text == "Your cat is called Miso."
    assert len(received) == 3  # two 500s, then the answer: the client retried twice
    assert [(role, _text(blocks)) for role, blocks in _stored(app, alice)] == [
        ("user", "My cat is called Miso."), ("assistant", "Your cat is called Miso.")]


def test_a_failed_call_and_its_later_retry_store_one_copy(retrying, received, app, alice):
    ask = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Book a table for six."}]
    with pytest.raises(openai.InternalServerError):
        retrying.chat.completions.create(model="fake-500", messages=ask)
    assert len(received) == 3
    assert _stored(app, alice) == []  # three failed attempts leave no turn without a reply
    retrying.chat.completions.create(model="fake-model", messages=ask)  # the app tries again later
    assert received[-1]["body"]["messages"] == ask
    assert [(role, _text(blocks)) for role, blocks in _stored(app, alice)] == [
        ("user", "Book a table for six."), ("assistant", "Your cat is called Miso.")]
    # Saying the same thing again after a reply is a new turn, not a retry.
    retrying.chat.completions.create(model="fake-model", messages=ask[1:])
    assert [role for role, _ in _stored(app, alice)] == ["user", "assistant", "user", "assistant"]


def test_the_history_a_request_carries_is_stored_once_in_order_and_reaches_the_upstream(retrying, received, app,
                                                                                          alice):
    history = []
    for i in range(5):
        history += [{"role": "user", "content": f"Fact {i}: my locker number {i} is {1000 + i}."},
                    {"role": "assistant", "content": f"Noted, locker {i} is {1000 + i}."}]
    ask = {"role": "user", "content": "Which locker numbers did I give you?"}
    retrying.chat.completions.create(model="fake-model", messages=[{"role": "system", "content": "Be brief."},
                                                                   *history, ask])
    assert len(received[0]["body"]["messages"]) > 2
    sent = json.dumps(received[0]["body"]["messages"])
    assert all(m["content"] in sent for m in history)  # the history reached the upstream
    assert sent.count("Which locker numbers did I give you?") == 1
    expected = [(m["role"], m["content"]) for m in [*history, ask]] + [("assistant", "Your cat is called Miso.")]
    assert [(role, _text(blocks)) for role, blocks in _stored(app, alice)] == expected
    follow = {"role": "user", "content": "And the first one?"}
    retrying.chat.completions.create(model="fake-model", messages=[
        *history, ask, {"role": "assistant", "content": "Your cat is called Miso."}, follow])
    assert [(role, _text(blocks)) for role, blocks in _stored(app, alice)] == [
        *expected, ("user", "And the first one?"), ("assistant", "Your cat is called Miso.")]


class _Counted:
    """An ASGI app that counts the HTTP requests reaching it."""

    def __init__(self, inner) -> None:
        self.inner, self.requests = inner, 0

    async def __call__(self, scope, receive, send) -> None:
        self.requests += scope["type"] == "http"
        await self.inner(scope, receive, send)


def test_without_an_upstream_the_proxy_answers_503_naming_the_setting_once(app, database_url, api_key_for, alice):
    """The official client with its default retries asks once: the answer tells it not to retry."""
    no_upstream = Settings(database_url=database_url, pool_min_size=1, pool_max_size=4)
    assert no_upstream.upstream_base_url is None
    with app.pool.connection() as conn:
        before = row_counts(conn)
    counted = _Counted(build_api(app, no_upstream))
    with serve(counted) as url, openai.OpenAI(base_url=url + "/v1", api_key=api_key_for(alice),
                                              default_headers={"X-Memctx-Conversation": "chat-1"}) as alices:
        for call in (lambda: alices.chat.completions.create(model="fake-model",
                                                            messages=[{"role": "user", "content": "hi"}]),
                     alices.models.list):
            counted.requests = 0
            with pytest.raises(openai.InternalServerError) as caught:
                call()
            assert caught.value.status_code == 503 and counted.requests == 1
            assert caught.value.response.headers["x-should-retry"] == "false"
            assert caught.value.code == "no_upstream" and caught.value.type == "server_error"
            assert "MEMCTX_UPSTREAM_BASE_URL" in caught.value.message  # what the SDK shows
    with app.pool.connection() as conn:
        after = row_counts(conn)
    assert {k: v for k, v in after.items() if k != "api_keys"} == {k: v for k, v in before.items() if k != "api_keys"}


def test_a_conversation_that_fits_reaches_the_upstream_as_the_client_sent_it(api_server, api_key_for, received, app,
                                                                             alice):
    """A client that sends its whole history each turn, with the openai client's default settings,
    at the default budget of 4,000 tokens: the upstream gets that history verbatim, nothing added,
    and the log counts no negative saving."""
    sent = [{"role": "system", "content": "You help plan trips."}]
    with openai.OpenAI(base_url=api_server + "/v1", api_key=api_key_for(alice),
                       default_headers={"X-Memctx-Conversation": "trip"}) as trip:
        for _, _, text in TRIP[::2]:
            sent.append({"role": "user", "content": text})
            reply = trip.chat.completions.create(model="any-model", messages=sent)
            assert received[-1]["body"]["messages"] == sent
            sent.append({"role": "assistant", "content": reply.choices[0].message.content})
    with app.pool.connection() as conn:
        log = conn.execute("select token_budget, tokens_used, full_history_tokens from memctx.context_requests"
                           " order by id").fetchall()
    assert len(log) == len(TRIP) // 2 and all(r["token_budget"] == 4000 for r in log)
    assert all(r["tokens_used"] <= r["full_history_tokens"] for r in log)


def _says(body: dict, text: str) -> int:
    """How many of the messages the upstream received say exactly `text`."""
    return sum(m["content"] == text for m in body["messages"])


def _talk(app, user, name: str, turns: int) -> None:
    """`turns` stored turns of a conversation, user and assistant in turn, a minute apart."""
    conv = app.store.create_conversation(user, external_id=name)
    t0 = datetime.now(timezone.utc) - timedelta(hours=2)
    app.store.append_messages(user, conv.id, [
        NewMessage.build("user" if i % 2 == 0 else "assistant",
                         f"Note {i}: the crate in bay {i} holds {3 * i + 7} blue ceramic tiles for the kitchen floor.",
                         created_at=t0 + timedelta(minutes=i)) for i in range(turns)])


@pytest.mark.parametrize("key", [None, "turn-61"])
@pytest.mark.parametrize("turns", [0, 60])
def test_a_retry_sends_the_users_turn_once(api_server, api_key_for, received, app, alice, key, turns):
    """The official client's default retries after two failures: every attempt carries the turn
    once, whether or not the call has a key, in a new conversation or after 60 turns (a
    compressed context), and it is stored once with its reply."""
    _talk(app, alice, "long", turns)
    ask = "How many tiles are in bay 12?"
    with openai.OpenAI(base_url=api_server + "/v1", api_key=api_key_for(alice),
                       default_headers={"X-Memctx-Conversation": "long"}) as retrying:
        retrying.chat.completions.create(model="fake-500-twice", messages=[{"role": "user", "content": ask}],
                                         extra_headers={"Idempotency-Key": key} if key else None)
    assert len(received) == 3
    assert [_says(r["body"], ask) for r in received] == [1, 1, 1]
    assert received[0]["body"] == received[2]["body"]  # the retry is the request memctx meant the first time
    stored = _stored(app, alice, "long")
    assert [_text(blocks) for _, blocks in stored[turns:]] == [ask, "Your cat is called Miso."]
    with app.pool.connection() as conn:
        saved = conn.execute("select full_history_tokens - tokens_used as saved from memctx.context_requests"
                             " order by id").fetchall()
    assert all(r["saved"] >= 0 for r in saved)


def test_a_failed_upstream_leaves_no_orphan_turn(retrying, received, app, alice):
    """What is stored when the upstream fails: nothing of the request. The next request's prompt
    alternates as the client's does."""
    retrying.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "My cat is Miso."}])
    with pytest.raises(openai.InternalServerError):
        retrying.chat.completions.create(model="fake-500", messages=[{"role": "user", "content": "Book a table."}])
    assert len(received) == 4
    retrying.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "What is my cat called?"}])
    roles = [m["role"] for m in received[-1]["body"]["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert [(role, _text(blocks)) for role, blocks in _stored(app, alice)] == [
        ("user", "My cat is Miso."), ("assistant", "Your cat is called Miso."),
        ("user", "What is my cat called?"), ("assistant", "Your cat is called Miso.")]


def test_no_system_prompt_is_added_unless_the_context_carries_memories(retrying, received, app, alice):
    """A client that sends no system message gets none while its history is sent as it is; a
    compressed context carries its memories with the day's line alone, and the log weighs it
    against the client's own status quo (history and query, no system message)."""
    retrying.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "Hello there."}])
    assert [m["role"] for m in received[0]["body"]["messages"]] == ["user"]
    _talk(app, alice, "long", 60)
    ask = {"role": "user", "content": "How many tiles are in bay 12?"}
    retrying.chat.completions.create(model="small-model", messages=[ask], extra_headers={"X-Memctx-Conversation": "long"})
    sent = received[-1]["body"]["messages"]
    today = datetime.now(timezone.utc).date()
    assert sent[0] == {"role": "system", "content": f"Today is {today:%A}, {today.day} {today:%B %Y}."}
    assert "helpful assistant" not in json.dumps(sent) and sent[-1] == ask
    history = [{"role": role, "content": _text(blocks)} for role, blocks in _stored(app, alice, "long")][:60]
    with app.pool.connection() as conn:
        log = conn.execute("select tokens_used, full_history_tokens from memctx.context_requests order by id").fetchall()
    assert log[-1]["tokens_used"] == messages_tokens(app.counter, sent) <= 300
    assert log[-1]["full_history_tokens"] == messages_tokens(app.counter, [*history, ask])


def test_the_proxys_own_errors_come_in_openais_shape(api_server, api_key_for, alice, received):
    """What the SDK shows: the reason, its type and code, and the field it names."""
    with openai.OpenAI(base_url=api_server + "/v1", api_key=api_key_for(alice), max_retries=0) as anonymous_chat:
        with pytest.raises(openai.UnprocessableEntityError) as caught:  # no conversation named
            anonymous_chat.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "hi"}])
        assert caught.value.body["type"] == "invalid_request_error" and caught.value.body["code"] == "invalid_value"
        assert caught.value.body["param"] == "X-Memctx-Conversation" and "name the conversation" in caught.value.message
        with pytest.raises(openai.UnprocessableEntityError) as caught:
            anonymous_chat.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "hi"}],
                                                   extra_headers={"X-Memctx-Conversation": "c", "X-Memctx-Scope": "all"})
        assert caught.value.body["param"] == "X-Memctx-Scope"
        with pytest.raises(openai.UnprocessableEntityError) as caught:  # no user message
            anonymous_chat.chat.completions.create(model="fake-model", messages=[{"role": "system", "content": "hi"}],
                                                   extra_headers={"X-Memctx-Conversation": "c"})
        assert "role 'user'" in caught.value.message
        with pytest.raises(openai.NotFoundError) as caught:
            anonymous_chat.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "hi"}],
                                                   extra_headers={"X-Memctx-Conversation": str(uuid.uuid4())})
        assert caught.value.body == {"message": "conversation not found", "type": "not_found_error", "param": None,
                                     "code": "conversation_not_found"}
    with openai.OpenAI(base_url=api_server + "/v1", api_key="mck_not-a-key", max_retries=0) as stranger:
        for call in (lambda: stranger.chat.completions.create(model="fake-model",
                                                              messages=[{"role": "user", "content": "hi"}]),
                     stranger.models.list):
            with pytest.raises(openai.AuthenticationError) as caught:
                call()
            assert caught.value.body["type"] == "authentication_error" and "credentials" in caught.value.message
    assert received == []


def test_a_new_conversation_remembers_the_users_other_ones(client, received, app, alice):
    """Cross-conversation memory by default, this conversation alone with the scope header; the
    diary's last weekend comes first without a moment given, and each memory names its
    conversation and date."""
    write_diary(app, alice, datetime.now(timezone.utc).date())
    client.chat.completions.create(model="small-model", messages=[{"role": "user", "content": DIARY_ASK}],
                                   extra_headers={"X-Memctx-Conversation": "new-chat"})
    memory = next(m["content"] for m in received[-1]["body"]["messages"] if m["content"].startswith("Relevant"))
    assert weekend_first(memory) and 'conversation "diary"]' in memory and "earlier in the conversation" not in memory
    client.chat.completions.create(model="small-model", messages=[{"role": "user", "content": DIARY_ASK}],
                                   extra_headers={"X-Memctx-Conversation": "other-chat", "X-Memctx-Scope": "conversation"})
    assert received[-1]["body"]["messages"] == [{"role": "user", "content": DIARY_ASK}]
