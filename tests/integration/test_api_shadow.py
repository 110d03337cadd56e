"""The proxy's shadow run, driven by the official `openai` client (its default settings, retries
included) against a real uvicorn server, whose upstream is a real OpenAI-compatible server on
loopback that keeps the bytes of every request it receives: in shadow mode they are the client's
own, byte for byte, while memctx stores the turn and records the context it would have sent,
which is what live mode sends in the same place."""

from __future__ import annotations

import json
import uuid
from types import SimpleNamespace
from typing import Iterator

import httpx
import openai
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from api_support import serve
from memctx.config import Settings

PIECES = ["The ferry ", "leaves at ", "nine."]


def _upstream_app(received: list[dict]) -> FastAPI:
    """An OpenAI-compatible server keeping each request's raw body: model `busy` answers 429, any
    other a reply (in SSE chunks when `stream` is set)."""
    upstream = FastAPI()

    @upstream.post("/v1/chat/completions")
    async def chat(request: Request):
        raw = await request.body()
        body = json.loads(raw)
        received.append({"raw": raw, "body": body, "authorization": request.headers.get("authorization"),
                         "content_type": request.headers.get("content-type")})
        if body["model"] == "busy":
            return JSONResponse({"error": {"message": "slow down", "type": "rate_limit_error"}}, status_code=429)
        if body.get("stream"):
            head = {"id": f"chatcmpl-{len(received)}", "object": "chat.completion.chunk", "created": 1,
                    "model": body["model"]}

            def events():
                for i, piece in enumerate(PIECES):
                    done = "stop" if i == len(PIECES) - 1 else None
                    yield "data: " + json.dumps({**head, "choices": [{"index": 0, "delta": {
                        "role": "assistant", "content": piece}, "finish_reason": done}]}) + "\n\n"
                yield "data: [DONE]\n\n"

            return StreamingResponse(events(), media_type="text/event-stream")
        return {"id": f"chatcmpl-{len(received)}", "object": "chat.completion", "created": 1, "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(PIECES)},
                             "finish_reason": "stop"}]}

    return upstream


@pytest.fixture
def upstream() -> Iterator[SimpleNamespace]:
    """A loopback upstream of this test's own: its `url`, and the requests it `received`."""
    requests: list[dict] = []
    with serve(_upstream_app(requests)) as url:
        yield SimpleNamespace(url=url, received=requests)


@pytest.fixture
def received(upstream) -> list[dict]:
    return upstream.received


@pytest.fixture
def settings(database_url, upstream) -> Settings:
    return Settings(database_url=database_url, pool_min_size=1, pool_max_size=4, upstream_base_url=upstream.url + "/v1",
                    upstream_api_key="upstream-secret", proxy_token_budgets={"small": 160})


@pytest.fixture
def clients():
    """Client(...) of the test, each closed at its end."""
    made: list[Client] = []
    yield lambda *args, **kwargs: made.append(Client(*args, **kwargs)) or made[-1]
    for client in made:
        client.openai.close()


class Client:
    """The official client of one user, keeping the bytes of every request it sends."""

    def __init__(self, base_url: str, key: str, conversation: str, mode: str | None = None) -> None:
        self.sent: list[bytes] = []
        headers = {"X-Memctx-Conversation": conversation, **({"X-Memctx-Mode": mode} if mode else {})}
        hooks = {"request": [lambda request: self.sent.append(request.read())]}
        self.openai = openai.OpenAI(base_url=base_url + "/v1", api_key=key, default_headers=headers,
                                    http_client=openai.DefaultHttpxClient(event_hooks=hooks))

    def ask(self, history: list[dict], text: str, **kwargs) -> str:
        """Send the history and a new user message, as a chat app does; append both turns."""
        history.append({"role": "user", "content": text})
        reply = self.openai.chat.completions.create(model=kwargs.pop("model", "small"), messages=history, **kwargs)
        content = ("".join(c.choices[0].delta.content or "" for c in reply if c.choices) if kwargs.get("stream")
                   else reply.choices[0].message.content)
        history.append({"role": "assistant", "content": content})
        return content


TURNS = ["My sister Ana lands in Lisbon on Friday at noon.", "She is vegetarian, remember that for dinner.",
         "We booked the Alfama guesthouse for three nights.", "Her flight number is TP 1331.",
         "Which ferry should we take to Cacilhas?", "What time does Ana land, and where is she staying?"]


def _rows(app, user, sql: str, *args):
    with app.for_user(user).pool.connection() as conn:
        return conn.execute(sql, args).fetchall()


def test_shadow_sends_the_client_s_bytes_and_records_what_live_mode_sends(app, api_server, api_key_for, received,
                                                                           clients):
    """Two users hold the same conversation, one in shadow mode (by header) and one live: each
    shadow request reaches the upstream byte for byte as the client sent it, and the context
    recorded beside it is, message for message, what the live user's upstream received."""
    shadowed, live = uuid.uuid4(), uuid.uuid4()
    shadow_client = clients(api_server, api_key_for(shadowed), "trip", mode="shadow")
    live_client = clients(api_server, api_key_for(live), "trip")
    shadow_history: list[dict] = [{"role": "system", "content": "Be brief."}]
    live_history = [dict(m) for m in shadow_history]
    for text in TURNS:
        shadow_client.ask(shadow_history, text, temperature=0.2)
        live_client.ask(live_history, text, temperature=0.2)
    shadow_bodies, live_bodies = received[0::2], received[1::2]
    assert [r["raw"] for r in shadow_bodies] == shadow_client.sent  # the client's bytes, as they were sent
    assert all(r["authorization"] == "Bearer upstream-secret" for r in received)  # never the memctx key
    assert [len(r["body"]["messages"]) for r in shadow_bodies] == [2 * i + 2 for i in range(len(TURNS))]

    recorded = _rows(app, shadowed, "select s.*, r.kind, r.upstream_status from memctx.shadow_requests s "
                                    "join memctx.context_requests r on r.id = s.request_id order by s.request_id")
    assert [(r["kind"], r["upstream_status"]) for r in recorded] == [("shadow", 200)] * len(TURNS)
    assert [r["context"] for r in recorded] == [r["body"]["messages"] for r in live_bodies]
    last = recorded[-1]
    assert last["context_tokens"] < last["client_tokens"]  # 160 tokens of context against the whole history
    assert last["history_messages"] == 2 * len(TURNS) - 2 and 0 < last["history_kept"] < last["history_messages"]
    stored = [m.text for m in app.store.list_messages(shadowed, app.store.find_conversation(shadowed, "trip").id)]
    assert stored == [m["content"] for m in shadow_history[1:]]  # every turn stored once, replies included

    totals = _rows(app, shadowed, "select sum(requests) as requests, sum(client_tokens) as client_tokens, "
                                  "sum(context_tokens) as context_tokens, sum(history_kept) as kept "
                                  "from memctx.shadow_comparison")[0]
    assert (totals["requests"], totals["client_tokens"], totals["context_tokens"], totals["kept"]) == (
        len(TURNS), sum(r["client_tokens"] for r in recorded), sum(r["context_tokens"] for r in recorded),
        sum(r["history_kept"] for r in recorded))


def test_a_stream_and_an_upstream_error_pass_through_in_shadow_mode(app, api_server, api_key_for, received, clients):
    user = uuid.uuid4()
    client = clients(api_server, api_key_for(user), "boat", mode="shadow")
    assert client.ask([], "When does the ferry leave?", stream=True) == "".join(PIECES)
    assert received[-1]["raw"] == client.sent[-1] and received[-1]["content_type"] == "application/json"
    busy = clients(api_server, api_key_for(user), "busy-boat", mode="shadow")
    with pytest.raises(openai.RateLimitError) as caught:
        busy.ask([], "And the next one?", model="busy", extra_headers={"Idempotency-Key": "next-1"})
    assert caught.value.body == {"message": "slow down", "type": "rate_limit_error"}  # as the upstream said it
    assert [r["raw"] for r in received] == client.sent + busy.sent  # the client's two retries too, as they were sent
    rows = _rows(app, user, "select r.kind, r.upstream_status, s.client_tokens from memctx.context_requests r "
                            "join memctx.shadow_requests s on s.request_id = r.id order by r.id")
    assert [(r["kind"], r["upstream_status"]) for r in rows] == [("shadow", 200)] + [("shadow", 429)] * 3
    for name, turns in (("boat", [("user", "When does the ferry leave?"), ("assistant", "".join(PIECES))]),
                        ("busy-boat", [])):  # as in live mode, a failed upstream call stores no orphan turn
        conv = app.store.find_conversation(user, name).id
        assert [(m.role, m.text) for m in app.store.list_messages(user, conv)] == turns


def test_a_conversation_switches_from_shadow_to_live_with_one_setting_its_history_stored(
        app, api_server, api_key_for, received, clients):
    user = uuid.uuid4()
    key = api_key_for(user)
    client = clients(api_server, key, "dinner")  # no header: the conversation's own mode decides
    history: list[dict] = []
    client.ask(history, "Book a table for six on Friday; my sister is vegetarian.")  # the server's mode: live
    with httpx.Client(base_url=api_server, headers={"Authorization": f"Bearer {key}"}) as api:
        assert api.get("/v1/conversations/dinner/proxy-mode").json() == {"mode": None, "effective": "live"}
        switched = api.put("/v1/conversations/dinner/proxy-mode", json={"mode": "shadow"})
        assert switched.json() == {"mode": "shadow", "effective": "shadow"}
        for text in ("We arrive at seven thirty.", "Bring the birthday cake."):
            client.ask(history, text)
            assert received[-1]["raw"] == client.sent[-1]  # shadow: the client's own request
        assert api.put("/v1/conversations/dinner/proxy-mode", json={"mode": "live"}).json()["effective"] == "live"
        client.ask([], "How many people, and what do they eat?")  # a client that sends only its new message
        live = received[-1]["body"]["messages"]
        assert "table for six" in json.dumps(live) and "seven thirty" in json.dumps(live)  # stored while in shadow
        forced = clients(api_server, key, "dinner", mode="shadow")  # a request's header decides for itself
        forced.ask([], "Anything else?")
        assert received[-1]["raw"] == forced.sent[-1]
        bad = api.put("/v1/conversations/dinner/proxy-mode", json={"mode": "sometimes"})
        assert bad.status_code == 422 and bad.json()["errors"][0]["loc"] == ["body", "mode"]
        assert api.put("/v1/conversations/nowhere/proxy-mode", json={"mode": "live"}).status_code == 404
    kinds = [r["kind"] for r in _rows(app, user, "select kind from memctx.context_requests order by id")]
    assert kinds == ["proxy", "shadow", "shadow", "proxy", "shadow"]


def test_the_server_s_mode_is_the_default_and_a_bad_header_is_a_422(app, settings, api_key_for, received, clients):
    from api_support import build_api

    shadow_settings = settings.model_copy(update={"proxy_mode": "shadow"})
    with serve(build_api(app, shadow_settings)) as base_url:
        user = uuid.uuid4()
        client = clients(base_url, api_key_for(user), "walk")
        client.ask([], "Where does the coastal walk start?")
        assert received[-1]["raw"] == client.sent[-1]
        with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {api_key_for(user)}"}) as api:
            assert api.get("/v1/conversations/walk/proxy-mode").json() == {"mode": None, "effective": "shadow"}
            bad = api.post("/v1/chat/completions", headers={"X-Memctx-Mode": "half", "X-Memctx-Conversation": "walk"},
                           json={"model": "small", "messages": [{"role": "user", "content": "hi"}]})
    assert bad.status_code == 422 and bad.json()["error"]["param"] == "X-Memctx-Mode"  # OpenAI's error shape


def test_the_board_page_compares_the_two_with_a_plot_and_switches_the_conversation(
        app, api_server, api_key_for, received, clients):
    user = uuid.uuid4()
    key = api_key_for(user)
    client = clients(api_server, key, "trip", mode="shadow")
    history: list[dict] = []
    for text in TURNS:
        client.ask(history, text)
    totals = _rows(app, user, "select sum(client_tokens) as client, sum(context_tokens) as context "
                              "from memctx.shadow_comparison")[0]
    with httpx.Client(base_url=api_server) as page:
        assert page.post("/ui/sign-in", data={"credential": key}).status_code == 303
        html = page.get("/ui/c/trip").text
        card = html.split('<section class="card shadow"', 1)[1].split("</section>", 1)[0]
        assert f"<dd>{len(TURNS)}</dd>" in card and f"<dd>{totals['client']:,}</dd>" in card
        assert f"<dd>{totals['context']:,}</dd>" in card
        points = [p.split('points="', 1)[1].split('"', 1)[0] for p in card.split("<polyline")[1:]]
        assert len(points) == 2 and all(len(p.split()) == len(TURNS) for p in points)  # a point per request, each line
        # The requests asked for shadow mode by header: the conversation itself still follows the server (live).
        assert "Live: the model gets" in card and "server&#x27;s setting" in card and "Switch to shadow" in card
        switched = page.post("/ui/c/trip/proxy-mode", data={"mode": "shadow"})
        assert switched.status_code == 303 and switched.headers["location"] == "/ui/c/trip?done=mode-shadow"
        assert "Switch to live" in page.get(switched.headers["location"]).text
        with httpx.Client(base_url=api_server, headers={"Authorization": f"Bearer {key}"}) as api:
            assert api.get("/v1/conversations/trip/proxy-mode").json() == {"mode": "shadow", "effective": "shadow"}
            assert page.post("/ui/c/trip/proxy-mode", data={"mode": "live"}).status_code == 303
            assert api.get("/v1/conversations/trip/proxy-mode").json() == {"mode": "live", "effective": "live"}
        after = page.get("/ui/c/trip?done=mode-live").text
        assert "Switched to live" in after and "its own setting" in after  # the card stays: the run is recorded
        assert page.post("/ui/c/trip/proxy-mode", data={"mode": "sometimes"}).status_code == 422
