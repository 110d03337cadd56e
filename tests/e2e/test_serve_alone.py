"""`memctx serve` alone on a fresh MEMCTX_HOME is the whole server: it starts the embedded
Postgres, migrates it, loads the embedder before /readyz says ready, and runs the worker, so a
conversation's board appears within seconds of its messages with nothing else started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx

from api_support import free_port, memctx_serve

ROOT = Path(__file__).resolve().parents[2]


def test_memctx_serve_alone_migrates_runs_the_worker_and_the_board_appears(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MEMCTX_DATABASE_URL"}
    env["MEMCTX_HOME"] = str(tmp_path / "home")
    log = tmp_path / "serve.log"
    serving = memctx_serve(["serve", "--port", str(free_port())], env, log, cwd=ROOT, timeout_s=120)
    try:
        with serving as base_url:
            made = subprocess.run([sys.executable, "-m", "memctx", "keys", "create", "--user", str(uuid.uuid4())],
                                  env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
            key = json.loads(made.stdout)["key"]
            with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as api:
                assert api.post("/v1/conversations", json={"external_id": "dinner"}).status_code == 201
                turns = [("user", "I booked a table for six at the harbour restaurant on Friday."),
                         ("assistant", "Noted: a table for six on Friday at the harbour."),
                         ("user", "My sister is vegetarian, please remember that."),
                         ("assistant", "Got it, one vegetarian guest."),
                         ("user", "We should arrive by seven thirty."),
                         ("assistant", "Arrival at seven thirty, table for six."),
                         ("user", "Remind me to bring the birthday cake.")]
                stored = api.post("/v1/conversations/dinner/messages",
                                  json={"messages": [{"role": r, "content": c} for r, c in turns]})
                assert stored.status_code == 201, stored.text
                appended = time.monotonic()
                board = None
                while board is None and time.monotonic() - appended < 30:
                    answer = api.get("/v1/conversations/dinner/board")
                    assert answer.status_code == 200, answer.text
                    board = answer.json()
                    time.sleep(0.3)
                assert board is not None, f"no board 30 s after the messages:\n{log.read_text()}"
                assert "six" in json.dumps(board)
                started = time.monotonic()  # the server's first context call: the embedder is loaded already
                context = api.post("/v1/conversations/dinner/context",
                                   json={"query": "How many people is the table for?", "token_budget": 1000})
                assert context.status_code == 200, context.text
                assert time.monotonic() - started < 3, "the first context call waited for the embedder"
                assert "table for six" in json.dumps(context.json()["messages"])
    finally:
        subprocess.run([sys.executable, "-m", "memctx", "db", "stop"], env=env, cwd=ROOT, capture_output=True,
                       timeout=120)
