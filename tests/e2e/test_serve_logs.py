"""What `memctx serve` writes to its log while it answers a context call that searches the web:
every line one JSON object, and neither the search query nor a fetched page's URL in it, at
debug too, with an engine that fails and a proxy call beside it; and `memctx worker` writes its
lines the same way."""

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
import openai

from api_support import free_port, memctx_serve
from web_support import LoopbackWeb

ROOT = Path(__file__).resolve().parents[2]


def test_serve_logs_one_json_object_a_line_and_no_query_or_url(database_url, tmp_path):
    web = LoopbackWeb()
    env = {**os.environ, "MEMCTX_DATABASE_URL": database_url, "MEMCTX_WEB_ENGINES": "searxng",
           "MEMCTX_SEARXNG_URL": web.base + "/searxng", "MEMCTX_WEB_ALLOW_PRIVATE": "true",
           "MEMCTX_WEB_KEYWORD_THRESHOLD": "0", "MEMCTX_LOG_LEVEL": "debug"}
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


def test_at_debug_no_line_carries_the_query_or_a_url_a_failing_engine_and_the_proxy_asked(database_url, tmp_path):
    web = LoopbackWeb()  # both engines fail (502 and 404): the search's failure is logged; the upstream answers
    env = {**os.environ, "MEMCTX_DATABASE_URL": database_url, "MEMCTX_LOG_LEVEL": "debug",
           "MEMCTX_WEB_ENGINES": "searxng,duckduckgo", "MEMCTX_SEARXNG_URL": web.base + "/broken",
           "MEMCTX_DUCKDUCKGO_URL": web.base + "/nowhere/", "MEMCTX_WEB_ALLOW_PRIVATE": "true",
           "MEMCTX_WEB_KEYWORD_THRESHOLD": "0", "MEMCTX_UPSTREAM_BASE_URL": web.base + "/v1"}
    log = tmp_path / "serve.log"
    asked = "zanzibar ferry timetable quokka"
    said = "my marmoset is called wobblebottom"
    try:
        with memctx_serve(["serve", "--port", str(free_port())], env, log, cwd=ROOT) as base_url:
            made = subprocess.run([sys.executable, "-m", "memctx", "keys", "create", "--user", str(uuid.uuid4())],
                                  env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
            key = json.loads(made.stdout)["key"]
            with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as api:
                assert api.post("/v1/conversations", json={"external_id": "trip"}).status_code == 201
                context = api.post("/v1/conversations/trip/context", json={"query": asked, "token_budget": 2000})
                assert context.status_code == 200, context.text
                external = context.json()["external_search"]
                assert external["failed"] and "502" in external["errors"][0] and "404" in external["errors"][0]
            client = openai.OpenAI(base_url=base_url + "/v1", api_key=key)  # the official client, its defaults
            reply = client.chat.completions.create(model="yes", messages=[{"role": "user", "content": said}],
                                                   extra_headers={"X-Memctx-Conversation": "pets"})
            assert reply.choices[0].message.content == "yes"
    finally:
        web.close()
    assert web.slm_requests  # the upstream was asked
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert any(r["level"] == "debug" for r in lines)  # the level asked for: every line there was
    assert any(r["msg"].startswith("external search failed") for r in lines)
    port = web.base.rsplit(":", 1)[1]
    carrying = [r for r in lines for secret in ("zanzibar", "quokka", "marmoset", "wobblebottom", port, key[4:])
                if secret in json.dumps(r)]
    assert not carrying, "\n".join(json.dumps(r) for r in carrying[:10])


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
