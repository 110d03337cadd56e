"""Helpers for the HTTP API's tests (tests/ is on pytest's pythonpath: `from api_support import …`).

`build_api(app, settings)` makes the FastAPI app over a test App; `api_key(app, user)` makes a user's
key; `serve(fastapi_app)` runs it on a real uvicorn server on a free loopback port, in a thread,
and yields its base URL; `memctx_serve(args, env, log)` runs `memctx serve` as a process until
its /readyz answers. The fixtures `api_server` and `api_key_for` (tests/integration/conftest.py)
wrap them.
"""

from __future__ import annotations

import ssl
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from uuid import UUID

import httpx
import uvicorn
from fastapi import FastAPI

from memctx.api.app import create_app
from memctx import keys
from memctx.app import App
from memctx.config import Settings
from memctx.evaluate.doors import free_port, serve_process


def build_api(app: App, settings: Settings) -> FastAPI:
    return create_app(app, settings)


def api_key(app: App, user: UUID, name: str | None = None) -> str:
    """A new API key of `user` (the plain key, as `memctx keys create` prints it)."""
    return keys.create_key(app.pool, user, name).secret


@contextmanager
def serve(fastapi_app: FastAPI, *, timeout_s: float = 15.0) -> Iterator[str]:
    """Run `fastapi_app` on uvicorn on 127.0.0.1 in a thread; yields the base URL, stops it cleanly."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(fastapi_app, host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test API server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout_s)


@contextmanager
def memctx_serve(args: list[str], env: dict[str, str], log: Path, *, cwd: Path,
                 timeout_s: float = 60.0, verify: ssl.SSLContext | None = None) -> Iterator[str]:
    """`python -m memctx serve ARGS` as a process (output in `log`), once its /readyz answers 200:
    yields its base URL (from `--port`; https with `--ssl-certfile`, its certificate checked with
    `verify`), then stops it with SIGINT as a user's Ctrl-C does."""
    with serve_process(args, env, log, cwd=cwd, timeout_s=timeout_s, verify=verify) as base_url:
        yield base_url


def client(base_url: str, key: str | None = None, **kwargs) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=base_url, headers=headers, timeout=60.0, **kwargs)
