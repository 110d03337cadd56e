"""The doors an evaluation asks through, so that its figures are what each door's users get.

Owns: `open_door(name, app, …)`, a context manager yielding a `Door` whose `ask(user,
conversation, query, budget, scope=…, now=…)` returns what the model would read (`Asked`):

- `python`: `ContextAssembler.get_working_context` in this process;
- `http`: `POST /v1/conversations/{id}/context` of a real `memctx serve` on loopback, with an API
  key of the user asking;
- `proxy`: the same server's `/v1/chat/completions` through the official `openai` client; what
  is scored is what a loopback upstream in this process receives. That upstream answers every
  call with an error, for which the proxy stores nothing, so the data asked about never changes;
- `mcp`: the same server's `get_working_context` tool through the official `mcp` client over
  streamable HTTP.

The server runs without its worker (the evaluation brings summaries up to date itself) on the
evaluation's own database; the keys made for it are revoked when the door closes. The proxy's
client sends the system prompt the other doors use by default, and a scope only when it is not
the server's default, so that every door is asked the same question. Nothing here scores.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator, Literal, Mapping, Protocol, Sequence
from uuid import UUID

import httpx

from memctx.assemble.context import ContextAssembler
from memctx.assemble.types import Source
from memctx.tokens import TokenCounter, messages_tokens

DOORS = ("python", "http", "proxy", "mcp")
Scope = Literal["conversation", "user"]
READY_TIMEOUT_S = 120.0
EVAL_MODEL = "memctx-eval-"  # the proxy's model names, one per budget: memctx-eval-2000


@dataclass(frozen=True)
class Asked:
    """What a door gave for one question: the chat messages, their tokens, the sources when the
    door reports them (the proxy does not), and the milliseconds the caller waited."""

    messages: list[dict[str, str]]
    tokens: int
    sources: list[Source] | None
    ms: float

    @property
    def text(self) -> str:
        return "\n".join(m["content"] for m in self.messages)


class Door(Protocol):
    name: str

    def ask(self, user: UUID, conversation: UUID, query: str, budget: int, *, scope: Scope,
            now: datetime) -> Asked: ...


class PythonDoor:
    """The assembler in this process."""

    name = "python"

    def __init__(self, assembler: ContextAssembler) -> None:
        self.assembler = assembler

    def ask(self, user: UUID, conversation: UUID, query: str, budget: int, *, scope: Scope,
            now: datetime) -> Asked:
        started = time.perf_counter()
        wc = self.assembler.get_working_context(user, conversation, query, budget, now=now,
                                                options=replace(self.assembler.options, scope=scope))
        return Asked(wc.messages, wc.tokens, wc.sources, _ms(started))


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000


def _sources(items: Sequence[Mapping[str, Any]]) -> list[Source]:
    return [Source(kind=s["kind"], id=s["id"], section=s["section"], external_id=s.get("external_id"))
            for s in items]


class _Keys:
    """An API key per user asking, made on first use and revoked at the end."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.made: dict[UUID, Any] = {}

    def of(self, user: UUID) -> str:
        from memctx import keys

        if user not in self.made:
            self.made[user] = keys.create_key(self.app.pool, user, "memctx eval")
        return self.made[user].secret

    def revoke(self) -> None:
        from memctx import keys

        for made in self.made.values():
            keys.revoke_key(self.app.pool, made.key.id)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve_process(args: Sequence[str], env: Mapping[str, str], log: Path, *, cwd: Path | None = None,
                  timeout_s: float = READY_TIMEOUT_S, verify: ssl.SSLContext | None = None) -> Iterator[str]:
    """`python -m memctx serve ARGS` as a process (its output in `log`), once its /readyz answers
    200: its base URL (from `--port`; https with `--ssl-certfile`, its certificate checked with
    `verify`). Stopped with SIGINT, as a user's Ctrl-C stops it."""
    port = args[list(args).index("--port") + 1]
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "memctx", *args], env=dict(env), cwd=cwd, stdout=out,
                                stderr=subprocess.STDOUT)
    base = f"http{'s' if '--ssl-certfile' in args else ''}://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"memctx serve exited:\n{log.read_text()}")
            try:
                ready = httpx.get(f"{base}/readyz", timeout=2, verify=verify or True)
                if ready.status_code == 200:
                    break
                if ready.json().get("status") != "not ready":
                    raise RuntimeError(f"memctx serve answered /readyz with {ready.text}")
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"memctx serve was not ready in {timeout_s:.0f} s:\n{log.read_text()}")
            time.sleep(0.2)
        yield base
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def served(database_url: str, env: Mapping[str, str]) -> Iterator[str]:
    """`memctx serve` on a free loopback port over the evaluation's database, without its worker:
    its base URL."""
    with tempfile.TemporaryDirectory(prefix="memctx-eval-serve-") as home:
        args = ["serve", "--host", "127.0.0.1", "--port", str(free_port()), "--no-migrate", "--no-worker"]
        with serve_process(args, {**os.environ, **env, "MEMCTX_DATABASE_URL": database_url},
                           Path(home) / "serve.log") as base:
            yield base


class HttpDoor:
    """`POST /v1/conversations/{id}/context` of a running server."""

    name = "http"

    def __init__(self, base_url: str, keys: _Keys) -> None:
        self.keys = keys
        self.http = httpx.Client(base_url=base_url, timeout=120)

    def ask(self, user: UUID, conversation: UUID, query: str, budget: int, *, scope: Scope,
            now: datetime) -> Asked:
        headers = {"Authorization": f"Bearer {self.keys.of(user)}"}
        started = time.perf_counter()
        answer = self.http.post(f"/v1/conversations/{conversation}/context", headers=headers, json={
            "query": query, "token_budget": budget, "scope": scope, "as_of": now.isoformat()})
        ms = _ms(started)
        answer.raise_for_status()
        wc = answer.json()
        return Asked(wc["messages"], wc["tokens"], _sources(wc["sources"]), ms)

    def close(self) -> None:
        self.http.close()


class _Upstream:
    """An OpenAI-compatible server on loopback that records each chat request by its `user`
    field and answers it with an error (the proxy then stores nothing)."""

    def __init__(self) -> None:
        received: dict[str, dict[str, Any]] = {}
        self.received = received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                received[str(body.get("user"))] = body
                answer = json.dumps({"error": {"message": "memctx eval: recorded, not answered",
                                               "type": "invalid_request_error", "code": "eval_recorded"}}).encode()
                self.send_response(400)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="memctx-eval-upstream", daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class ProxyDoor:
    """`/v1/chat/completions` through the official `openai` client (its default settings), scored
    on what the upstream received."""

    name = "proxy"

    def __init__(self, base_url: str, keys: _Keys, upstream: _Upstream, counter: TokenCounter, system_prompt: str,
                 default_scope: Scope) -> None:
        self.base_url, self.keys, self.upstream, self.counter = base_url, keys, upstream, counter
        self.system_prompt, self.default_scope = system_prompt, default_scope
        self.clients: dict[UUID, Any] = {}
        self.asked = 0

    def ask(self, user: UUID, conversation: UUID, query: str, budget: int, *, scope: Scope,
            now: datetime) -> Asked:
        import openai

        client = self.clients.get(user)
        if client is None:
            client = self.clients[user] = openai.OpenAI(base_url=self.base_url + "/v1", api_key=self.keys.of(user))
        self.asked += 1
        name = f"ask-{self.asked}"
        headers = {"X-Memctx-Conversation": str(conversation), "X-Memctx-As-Of": now.isoformat(),
                   **({"X-Memctx-Scope": scope} if scope != self.default_scope else {})}
        started = time.perf_counter()
        try:
            client.chat.completions.create(model=f"{EVAL_MODEL}{budget}", user=name, extra_headers=headers, messages=[
                {"role": "system", "content": self.system_prompt}, {"role": "user", "content": query}])
        except openai.BadRequestError as exc:
            if exc.code != "eval_recorded":
                raise
        ms = _ms(started)
        messages = self.upstream.received.pop(name)["messages"]
        return Asked(messages, messages_tokens(self.counter, messages), None, ms)

    def close(self) -> None:
        for client in self.clients.values():
            client.close()


class McpDoor:
    """The `get_working_context` tool through the official MCP client over streamable HTTP: one
    session at a time, for the user asking."""

    name = "mcp"

    def __init__(self, base_url: str, keys: _Keys, portal: Any) -> None:
        self.base_url, self.keys, self.portal = base_url, keys, portal
        self.user: UUID | None = None
        self.session: Any = None
        self.stack = ExitStack()

    def _session_of(self, user: UUID) -> Any:
        if user != self.user:
            self.stack.close()
            self.stack = ExitStack()
            self.session = self.stack.enter_context(self.portal.wrap_async_context_manager(
                _mcp_session(self.base_url, self.keys.of(user))))
            self.user = user
        return self.session

    def ask(self, user: UUID, conversation: UUID, query: str, budget: int, *, scope: Scope,
            now: datetime) -> Asked:
        session = self._session_of(user)
        started = time.perf_counter()
        result = self.portal.call(session.call_tool, "get_working_context", {
            "query": query, "token_budget": budget, "conversation_id": str(conversation), "scope": scope,
            "as_of": now.isoformat()})
        ms = _ms(started)
        if result.is_error:
            raise RuntimeError(f"get_working_context failed: {result.content[0].text}")
        wc = json.loads(result.content[0].text)
        return Asked(wc["messages"], wc["tokens"], _sources(wc["sources"]), ms)

    def close(self) -> None:
        self.stack.close()


def _mcp_session(base_url: str, key: str) -> Any:
    from contextlib import asynccontextmanager

    from mcp.client import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    @asynccontextmanager
    async def session():
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http, \
                streamable_http_client(f"{base_url}/mcp", http_client=http) as (read, write), \
                ClientSession(read, write) as opened:
            await opened.initialize()
            yield opened

    return session()


@contextmanager
def open_door(name: str, app: Any, assembler: ContextAssembler, budgets: Sequence[int]) -> Iterator[Door]:
    """The door `name` (one of DOORS) onto `app`'s database. A server's door starts `memctx serve`
    and stops it on exit; `budgets` are the proxy's per-model budgets."""
    if name not in DOORS:
        raise ValueError(f"door is one of {', '.join(DOORS)}, not {name!r}")
    if name == "python":
        yield PythonDoor(assembler)
        return
    from memctx.db import database_url

    keys = _Keys(app)
    with ExitStack() as stack:
        stack.callback(keys.revoke)
        env: dict[str, str] = {}
        upstream: _Upstream | None = None
        if name == "proxy":
            upstream = _Upstream()
            stack.callback(upstream.close)
            env = {"MEMCTX_UPSTREAM_BASE_URL": upstream.url, "MEMCTX_UPSTREAM_API_KEY": "memctx-eval",
                   "MEMCTX_PROXY_TOKEN_BUDGETS": json.dumps({f"{EVAL_MODEL}{b}": b for b in budgets})}
        base = stack.enter_context(served(database_url(app.settings), env))
        if name == "http":
            door: Any = HttpDoor(base, keys)
        elif name == "proxy":
            assert upstream is not None
            door = ProxyDoor(base, keys, upstream, app.counter, assembler.options.system_prompt,
                             app.settings.context_scope)
        else:
            from anyio.from_thread import start_blocking_portal

            door = McpDoor(base, keys, stack.enter_context(start_blocking_portal()))
        stack.callback(door.close)
        yield door
