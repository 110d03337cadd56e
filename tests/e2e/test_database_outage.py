"""A Postgres outage under `memctx serve`, as an operator meets it: the embedded server stopped
(`memctx db stop`) for 40 s while clients keep sending, then started again (`memctx db url`).

While it is down every request is answered within a few seconds, 503 with Retry-After, never a
hang or a 500; once it is back the next requests succeed within seconds; a client that retries
its 503s (as the messages' own ids make safe) loses nothing and stores nothing twice; and the
worker in the server's process catches up on what came in, by itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest

from api_support import free_port, memctx_serve

ROOT = Path(__file__).resolve().parents[2]
OUTAGE_S = 40.0
LIMIT_S = 5.0  # no request takes longer, during the outage or after it


@dataclass(frozen=True)
class Answer:
    door: str
    started: float
    took: float
    status: int | None  # None: no HTTP answer at all
    retry_after: str | None


def _memctx(env: dict[str, str], *args: str) -> str:
    return subprocess.run([sys.executable, "-m", "memctx", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=True).stdout.strip()


class _Clients:
    """Two clients of one conversation until `stop` is set: one appends numbered messages, each
    sent again after a 503 until it is stored; the other asks for a context."""

    def __init__(self, base_url: str, key: str) -> None:
        self.base_url, self.key = base_url, key
        self.answers: list[Answer] = []
        self.sent: list[str] = []  # the message ids answered 201
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._append, daemon=True),
                         threading.Thread(target=self._context, daemon=True)]

    def __enter__(self) -> "_Clients":
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join(60)

    def _send(self, api: httpx.Client, door: str, method: str, path: str, body: dict) -> int | None:
        started = time.monotonic()
        try:
            answer = api.request(method, path, json=body)
            status, retry_after = answer.status_code, answer.headers.get("retry-after")
        except httpx.TransportError:
            status, retry_after = None, None
        with self._lock:
            self.answers.append(Answer(door, started, time.monotonic() - started, status, retry_after))
        return status

    def _append(self) -> None:
        with httpx.Client(base_url=self.base_url, headers={"Authorization": f"Bearer {self.key}"}, timeout=60) as api:
            n = 0
            while not self.stop.is_set():
                message_id = f"m-{n}"
                body = {"messages": [{"role": "user" if n % 2 == 0 else "assistant", "id": message_id,
                                      "content": f"Turn {n}: the ferry to the island leaves at {n % 12 + 1} o'clock."}]}
                status = self._send(api, "append", "POST", "/v1/conversations/outage/messages", body)
                if status == 201:
                    self.sent.append(message_id)
                    n += 1
                time.sleep(0.25)

    def _context(self) -> None:
        with httpx.Client(base_url=self.base_url, headers={"Authorization": f"Bearer {self.key}"}, timeout=60) as api:
            while not self.stop.is_set():
                self._send(api, "context", "POST", "/v1/conversations/outage/context",
                           {"query": "When does the ferry leave?", "token_budget": 1000})
                time.sleep(0.25)


@pytest.mark.slow
def test_a_40_s_outage_is_answered_fast_and_recovered_from_with_nothing_lost(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MEMCTX_DATABASE_URL"}
    env["MEMCTX_HOME"] = str(tmp_path / "home")
    log = tmp_path / "serve.log"
    try:
        with memctx_serve(["serve", "--port", str(free_port())], env, log, cwd=ROOT, timeout_s=120) as base_url:
            key = json.loads(_memctx(env, "keys", "create", "--user", str(uuid.uuid4())))["key"]
            assert httpx.post(f"{base_url}/v1/conversations", json={"external_id": "outage"},
                              headers={"Authorization": f"Bearer {key}"}).status_code == 201
            with _Clients(base_url, key) as clients:
                time.sleep(4)
                _memctx(env, "db", "stop")
                stopped = time.monotonic()
                time.sleep(OUTAGE_S)
                restarting = time.monotonic()
                _memctx(env, "db", "url")  # starts it again
                back = time.monotonic()
                time.sleep(12)
            url = _memctx(env, "db", "url")
            answers, sent = clients.answers, clients.sent
            report = _report(answers, stopped, restarting, back)
            print(report)
            assert max(a.took for a in answers) < LIMIT_S, report
            assert {a.status for a in answers} <= {200, 201, 503}, report  # never a 500, always an answer
            assert all(a.retry_after for a in answers if a.status == 503), report
            during = [a for a in answers if stopped < a.started < restarting - 1]
            assert during and all(a.status == 503 for a in during), report
            for door in ("append", "context"):
                first_ok = min(a.started + a.took for a in answers if a.door == door and a.started > back
                               and a.status in (200, 201))
                assert first_ok - back < LIMIT_S, report
                after = [a for a in answers if a.door == door and a.started > back + LIMIT_S]
                assert after and all(a.status in (200, 201) for a in after), report

            with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as api:
                stored = api.get("/v1/conversations/outage/messages", params={"limit": 1000}).json()["items"]
            assert [m["external_id"] for m in stored] == sent  # every message once, in order: none lost, none twice
            assert len(sent) > 40

            deadline = time.monotonic() + 60  # the in-process worker catches up by itself
            with psycopg.connect(url, autocommit=True) as conn:
                while True:
                    caught_up = conn.execute(
                        "select (select count(*) from memctx.worker_backlog) as pending, "
                        "       (select count(*) from memctx.messages where embedding is null) as unembedded, "
                        "       (select max(last_seq) from memctx.summaries where level = 1) as summarized").fetchone()
                    if caught_up[:2] == (0, 0) and (caught_up[2] or 0) >= len(sent) - 6:
                        break
                    assert time.monotonic() < deadline, (caught_up, len(sent), log.read_text()[-4000:])
                    time.sleep(0.5)
    finally:
        subprocess.run([sys.executable, "-m", "memctx", "db", "stop"], env=env, cwd=ROOT, capture_output=True,
                       timeout=120)


def _report(answers: list[Answer], stopped: float, restarting: float, back: float) -> str:
    """The answers by phase: count by status, and the slowest."""
    phases = {"before the stop returned": [a for a in answers if a.started < stopped],
              "stopped": [a for a in answers if stopped <= a.started < restarting],
              "while it starts again": [a for a in answers if restarting <= a.started < back],
              "after": [a for a in answers if a.started >= back]}
    lines = []
    for phase, found in phases.items():
        statuses = {s: sum(1 for a in found if a.status == s) for s in sorted({a.status for a in found}, key=str)}
        slowest = max((a.took for a in found), default=0.0)
        lines.append(f"{phase}: {len(found)} requests {statuses}, slowest {slowest:.2f} s")
    firsts = [min((a.started + a.took - back for a in answers if a.door == door and a.started >= back
                   and a.status in (200, 201)), default=float("nan")) for door in ("append", "context")]
    lines.append(f"first success after the restart: append {firsts[0]:.2f} s, context {firsts[1]:.2f} s")
    return "\n".join(lines)
