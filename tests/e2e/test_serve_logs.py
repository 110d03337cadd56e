"""What `memctx serve` writes to its log while it answers a context call that searches the web:
every line one JSON object, and neither the search query nor a fetched page's URL in it; and
`memctx worker` writes its lines the same way."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx

from api_support import free_port, memctx_serve
from web_support import LoopbackWeb

ROOT = Path(__file__).resolve().parents[2]


def test_serve_logs_one_json_object_a_line_and_no_query_or_url(database_url, tmp_path):
    web = LoopbackWeb()
    env = {**os.environ, "MEMCTX_DATABASE_URL": database_url, "MEMCTX_SEARCH_ENGINES": "searxng",
           "MEMCTX_SEARXNG_URL": web.base + "/searxng", "MEMCTX_SEARCH_ALLOW_PRIVATE": "true",
           "MEMCTX_SEARCH_KEYWORD_THRESHOLD": "0"}
    log = tmp_path / "serve.log"
    query = "zanzibar ferry timetable quokka"
    try:
        with memctx_serve(["serve", "--port", str(free_port())], env, log, cwd=ROOT) as base_url:
            made = subprocess.run([sys.executable, "-m", "memctx", "keys", "create", "--user", str(uuid.uuid4())],
                                  env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
            auth = {"Authorization": f"Bearer {json.loads(made.stdout)['key']}"}
            with httpx.Client(base_url=base_url, headers=auth, timeout=60) as api:
                assert api.post("/v1/conversations", json={"external_id": "trip"}).status_code == 201
                context = api.post("/v1/conversations/trip/context", json={"query": query, "token_budget": 2000})
                assert context.status_code == 200, context.text
                assert any(s.get("url") for s in context.json()["sources"]), context.text  # the web was searched
                assert api.post("/v1/conversations/nope/context", json={"query": "x", "token_budget": 99},
                                headers={"Authorization": "Bearer mck_bad"}).status_code == 401
    finally:
        web.close()
    assert web.queries  # the engine was asked
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    assert lines
    for line in lines:
        record = json.loads(line)  # every line is one JSON object
        assert isinstance(record, dict) and record["level"] in ("debug", "info", "warning", "error", "critical")
    text = log.read_text()
    assert "zanzibar" not in text and "quokka" not in text and web.base not in text


def test_the_worker_logs_one_json_object_a_line(database_url, tmp_path):
    log = tmp_path / "worker.log"
    with log.open("w") as out:
        worker = subprocess.Popen([sys.executable, "-m", "memctx", "worker"], cwd=ROOT, stdout=out, stderr=out,
                                  env={**os.environ, "MEMCTX_DATABASE_URL": database_url})
    try:
        deadline = time.monotonic() + 60
        while "memctx worker running" not in log.read_text():
            assert worker.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
    finally:
        worker.send_signal(signal.SIGINT)
        worker.wait(timeout=60)
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert {r["msg"].split(":")[0] for r in records} >= {"memctx worker running", "stopping"}
    assert all(r["logger"] and r["level"] for r in records)
