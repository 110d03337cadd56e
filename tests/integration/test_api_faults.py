"""Faults a running API meets, each with a clear answer through the real server: not ready while
the embedder loads, the sessions of a database restart replaced before a request uses them, no
connection free within MEMCTX_POOL_TIMEOUT_S (503 with Retry-After, at once, by the gate too; a
whole outage is tests/e2e/test_database_outage.py), a conversation deleted while its context is
built (404), uploads refused before they are read (401 for no
credential, 413 over the size limit), and one shape for every error answer."""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest

from api_support import api_key, build_api, client, serve
from memctx.app import open_app
from memctx.config import Settings


class _SlowEmbedder:
    """The session's embedder, whose loading waits until the test releases it."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.release = threading.Event()

    def load(self) -> None:
        self.release.wait(30)

    def embed(self, texts):
        return self.inner.embed(texts)

    def embed_queries(self, texts):
        return self.inner.embed_queries(texts)


def test_readyz_answers_200_only_once_the_embedder_has_loaded(app, settings):
    slow = _SlowEmbedder(app.embedder)
    with serve(build_api(dataclasses.replace(app, embedder=slow), settings)) as url:
        assert httpx.get(f"{url}/healthz").status_code == 200
        waiting = httpx.get(f"{url}/readyz")
        assert (waiting.status_code, waiting.json()) == (503, {"status": "not ready",
                                                               "reason": "the embedder is loading"})
        slow.release.set()
        deadline = time.monotonic() + 10
        while (ready := httpx.get(f"{url}/readyz")).status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.json() == {"status": "ready"}


def test_sessions_a_restart_ended_are_never_handed_to_a_request(api_server, api_key_for, database_url):
    with client(api_server, api_key_for(uuid.uuid4())) as c:
        assert c.post("/v1/conversations", json={"external_id": "a"}).status_code == 201
        answers = [c.get("/v1/conversations") for _ in range(4)]  # the pool holds a few sessions now
        with psycopg.connect(database_url, autocommit=True) as admin:  # what a restart does to every session
            ended = admin.execute("select pg_terminate_backend(pid) from pg_stat_activity "
                                  "where datname = current_database() and pid <> pg_backend_pid()").fetchall()
        assert ended
        time.sleep(0.2)  # the server's goodbye reaches the idle sessions
        answers += [c.get("/v1/conversations") for _ in range(8)]
    # Each pooled session's socket says it was closed: the pool replaces it before a request uses it.
    assert [a.status_code for a in answers] == [200] * 12
    assert [i["external_id"] for i in answers[-1].json()["items"]] == ["a"]


def test_no_connection_free_is_a_503_with_retry_after_once_the_pool_timeout_has_passed(database_url, embedder):
    settings = Settings(database_url=database_url, pool_min_size=1, pool_max_size=1, pool_timeout_s=0.5)
    with open_app(settings, embedder=embedder) as app, serve(build_api(app, settings)) as url:
        key = api_key(app, uuid.uuid4())
        with client(url, key) as c:
            assert c.post("/v1/conversations", json={"external_id": "a"}).status_code == 201
            held = app.pool.getconn()  # every connection busy, as under a long statement
            try:
                answers = []
                for method, path in (("GET", "/v1/conversations"), ("POST", "/v1/conversations")):
                    started = time.monotonic()  # the POST is refused by the gate's key lookup
                    answers.append((c.request(method, path, json={"external_id": "b"}), time.monotonic() - started))
            finally:
                app.pool.putconn(held)
            assert c.get("/v1/conversations").status_code == 200
    for answer, took in answers:
        assert answer.status_code == 503 and answer.headers["retry-after"] == "2", answer.text
        assert "MEMCTX_POOL_TIMEOUT_S" in answer.json()["detail"]
        assert 0.4 < took < 1.5


class _InterruptingEngine:
    """A SearXNG-compatible engine on loopback that runs `before` (what another request of the
    user's would do meanwhile) and then answers with `results`: the context call is then half done."""

    def __init__(self, results: list[dict[str, str]]) -> None:
        self.before = lambda: None
        engine = self
        body = json.dumps({"results": results}).encode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                engine.before()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_a_conversation_deleted_during_its_context_call_is_a_404(database_url, embedder):
    engine = _InterruptingEngine([])
    settings = Settings(database_url=database_url, pool_min_size=1, pool_max_size=4, web_engines=["searxng"],
                        searxng_url=engine.url, web_allow_private=True, web_keyword_threshold=0)
    user = uuid.uuid4()
    try:
        with open_app(settings, embedder=embedder) as app, serve(build_api(app, settings)) as url:
            from api_support import api_key

            with client(url, api_key(app, user)) as c:
                made = c.post("/v1/conversations", json={"external_id": "doomed"}).json()
                c.post("/v1/conversations/doomed/messages", json={"messages": [{"role": "user", "content": "hi"}]})
                engine.before = lambda: _delete_conversation(database_url, made["id"])
                answer = c.post("/v1/conversations/doomed/context",
                                json={"query": "latest news about the harbour", "token_budget": 800})
                assert (answer.status_code, answer.json()) == (404, {"detail": "conversation not found"})
                assert c.get("/v1/conversations/doomed").status_code == 404
    finally:
        engine.server.shutdown()
        engine.server.server_close()


def _delete_conversation(database_url: str, conversation: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("delete from memctx.conversations where id = %s", (conversation,))


def _forget(api_url: str, key: str) -> None:
    forgotten = httpx.delete(f"{api_url}/v1/me", headers={"Authorization": f"Bearer {key}"})
    assert forgotten.status_code == 200, forgotten.text


def test_a_user_forgotten_during_a_web_search_context_call_leaves_no_search_cache_row(database_url, embedder):
    engine = _InterruptingEngine([{"title": "Harbour news", "url": "http://127.0.0.1:9/harbour",
                                   "content": "The harbour reopens on Monday."}])
    settings = Settings(database_url=database_url, pool_min_size=1, pool_max_size=4, web_engines=["searxng"],
                        searxng_url=engine.url, web_allow_private=True, web_keyword_threshold=0)
    user = uuid.uuid4()
    try:
        with open_app(settings, embedder=embedder) as app, serve(build_api(app, settings)) as url:
            from api_support import api_key

            key = api_key(app, user)
            engine.before = lambda: _forget(url, key)  # DELETE /v1/me while the search runs
            with client(url, key) as c:
                c.post("/v1/conversations", json={"external_id": "harbour"})
                c.post("/v1/conversations/harbour/messages", json={"messages": [{"role": "user", "content": "hi"}]})
                answer = c.post("/v1/conversations/harbour/context",
                                json={"query": "latest news about the harbour", "token_budget": 800})
                assert answer.status_code == 404
        with psycopg.connect(database_url) as admin:
            left = admin.execute("select count(*) from memctx.search_cache where user_id = %s", (user,)).fetchone()
        assert left == (0,), "the forgotten user's search cache row survived"
    finally:
        engine.server.shutdown()
        engine.server.server_close()


@pytest.fixture
def small_bodies(app, settings):
    """A server that takes request bodies of at most 64 KiB (MEMCTX_API_MAX_BODY_BYTES)."""
    with serve(build_api(app, settings.model_copy(update={"api_max_body_bytes": 64 * 1024}))) as base_url:
        yield base_url


def _raw(base_url: str, head: str, body: bytes = b"", timeout: float = 5.0) -> tuple[int, str]:
    """Send a request head (and perhaps the start of its body) and read the answer's status line and
    body without sending the rest: a server that waits for the whole body times out here."""
    host, port = urlsplit(base_url).hostname, urlsplit(base_url).port
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
    status_line, _, rest = answer.decode("latin-1").partition("\r\n")
    return int(status_line.split()[1]), rest


def test_uploads_are_refused_before_they_are_read(small_bodies, api_key_for):
    key = api_key_for(uuid.uuid4())
    huge = 57 * 1024 * 1024
    head = f"POST /v1/conversations/c/messages HTTP/1.1\nHost: x\nContent-Type: application/json\nContent-Length: {huge}\n"
    status, rest = _raw(small_bodies, head, b'{"messages": [')
    assert status == 401 and "www-authenticate: bearer" in rest.lower()  # no credential: not read at all
    status, _ = _raw(small_bodies, head + "Authorization: Bearer mck_not-a-key\n", b'{"messages": [')
    assert status == 401
    status, rest = _raw(small_bodies, head + f"Authorization: Bearer {key}\n", b'{"messages": [')
    assert status == 413 and "MEMCTX_API_MAX_BODY_BYTES" in rest  # too large by its Content-Length
    with client(small_bodies, key) as c:
        assert c.post("/v1/conversations", json={"external_id": "c"}).status_code == 201

        def streamed():  # no Content-Length: refused once it passes the limit
            yield b'{"messages": ['
            for _ in range(2000):
                yield json.dumps({"role": "user", "content": "x" * 100}).encode() + b","
            yield b'{"role": "user", "content": "end"}]}'

        too_big = c.post("/v1/conversations/c/messages", content=streamed(),
                         headers={"Content-Type": "application/json"})
        assert too_big.status_code == 413
        fine = c.post("/v1/conversations/c/messages", json={"messages": [{"role": "user", "content": "small"}]})
        assert fine.status_code == 201
        assert [m["content"][0]["text"] for m in c.get("/v1/conversations/c/messages").json()["items"]] == ["small"]
        metrics = c.get("/metrics").text  # the refusals are counted under their route
    for status in (401, 413):
        assert (f'memctx_http_request_duration_seconds_count{{method="POST",'
                f'route="/v1/conversations/{{conversation}}/messages",status="{status}"}}') in metrics


def test_every_error_answer_has_one_shape(api_server, api_key_for):
    with client(api_server, api_key_for(uuid.uuid4())) as c, client(api_server) as anonymous:
        assert c.post("/v1/conversations", json={"external_id": "c"}).status_code == 201
        answers = {
            "no credential": anonymous.get("/v1/conversations"),
            "unknown conversation": c.get(f"/v1/conversations/{uuid.uuid4()}"),
            "a field's shape": c.post("/v1/search", json={"query": "q", "limit": 0}),
            "a field memctx refuses": c.post("/v1/conversations/x/context", json={"query": "q " * 50, "token_budget": 5}),
            "a limit of the server": c.get("/v1/conversations", params={"limit": 10**6}),
            "a content memctx refuses": c.post("/v1/conversations/c/messages",
                                               json={"messages": [{"role": "user", "content": "a\x00b"}]}),
            "not JSON": c.post("/v1/conversations", content=b"{nope", headers={"Content-Type": "application/json"}),
        }
    for what, answer in answers.items():
        body = answer.json()
        assert 400 <= answer.status_code < 500 and isinstance(body.get("detail"), str) and body["detail"], (what, body)
        assert set(body) <= {"detail", "errors"}, (what, body)
        for item in body.get("errors", []):
            assert set(item) == {"loc", "msg", "type"} and item["msg"] in body["detail"], (what, body)
    assert answers["a field's shape"].json()["errors"][0]["loc"] == ["body", "limit"]
    documented = httpx.get(f"{api_server}/openapi.json").json()["components"]["schemas"]["HTTPValidationError"]
    assert documented["properties"]["detail"]["type"] == "string" and "errors" in documented["properties"]
    assert answers["a limit of the server"].json()["errors"][0]["loc"] == ["query", "limit"]
    assert answers["a content memctx refuses"].json()["errors"] == [{
        "loc": ["body", "messages", 0], "msg": "messages[0]: text contains a NUL byte", "type": "value_error"}]
