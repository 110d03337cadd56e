"""`memctx serve` keeps an idle connection open longer than HTTP clients keep one for reuse.

httpx (and so the openai client) reuses a pooled connection for up to 5 s idle, uvicorn's own
default keep-alive. When the server closes at the same moment a client sends on that connection,
the client gets a bare ReadError and the request is lost: 22 of 4,000 appends and 7 of 400
contexts under 200 concurrent conversations (bench/turns.py --check-messages). A server that
holds idle connections longer than clients do never closes one a client is about to use."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

from api_support import free_port, memctx_serve

ROOT = Path(__file__).resolve().parents[2]
HTTPX_KEEPALIVE_EXPIRY_S = 5.0  # httpx.Limits' default: how long the client's pool reuses an idle connection


def _get(sock: socket.socket, host: str) -> bytes:
    sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: keep-alive\r\n\r\n".encode())
    answer = b""
    while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        answer += chunk
    return answer


def test_an_idle_connection_outlives_the_clients_reuse_window(database_url, tmp_path):
    env = {**os.environ, "MEMCTX_DATABASE_URL": database_url}
    with memctx_serve(["serve", "--port", str(free_port()), "--no-worker"], env, tmp_path / "serve.log",
                      cwd=ROOT) as base_url:
        host, port = urlsplit(base_url).hostname, urlsplit(base_url).port
        with socket.create_connection((host, port), timeout=10) as sock:
            assert _get(sock, host).startswith(b"HTTP/1.1 200")
            time.sleep(HTTPX_KEEPALIVE_EXPIRY_S + 1.5)  # idle past what a client would still reuse
            try:
                again = _get(sock, host)
            except ConnectionError as exc:
                again = repr(exc).encode()
            assert again.startswith(b"HTTP/1.1 200"), f"the server closed the idle connection: {again[:80]!r}"
