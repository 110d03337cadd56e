"""`memctx eval … --door python|http|proxy|mcp` as a user runs it: the same questions asked through
the Python call, a real `memctx serve` (its HTTP route, its OpenAI proxy with a loopback upstream,
its MCP tools through the official client) give the same contexts, and asking through the proxy
stores nothing."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

from memctx.evaluate.doors import DOORS

pytestmark = pytest.mark.slow

DOG = "I just adopted a corgi named Biscuit and he loves the beach."
TOPICS = ["the best hiking boots for wet trails", "a sourdough recipe with whole wheat flour",
          "repotting a fiddle leaf fig", "cheap flights to Lisbon in May", "a budget for a kitchen renovation"]


def _longmemeval(tmp_path):
    """One user, six dated sessions; the evidence said on a Saturday, asked about by its weekend."""
    sessions = [[{"role": "user", "content": f"Can you help me with {t}?"},
                 {"role": "assistant", "content": f"Of course. Here are a few thoughts on {t}, one by one."}]
                for t in TOPICS]
    sessions.append([{"role": "user", "content": DOG, "has_answer": True},
                     {"role": "assistant", "content": "Corgis love the beach. Watch his paws in the hot sand."}])
    data = [{"question_id": "q-dog", "question_type": "temporal-reasoning", "answer": "corgi",
             "question": "Which dog did I tell you about last weekend?", "question_date": "2023/06/05 (Mon) 10:00",
             "haystack_session_ids": [f"s{i}" for i in range(len(sessions))],
             "haystack_dates": [f"2023/05/{10 + i:02d} (Wed) 09:00" for i in range(len(TOPICS))]
             + ["2023/06/03 (Sat) 18:00"],
             "haystack_sessions": sessions, "answer_session_ids": [f"s{len(TOPICS)}"]}]
    path = tmp_path / "lme.json.gz"
    path.write_bytes(gzip.compress(json.dumps(data).encode()))
    return path


def _eval(args, settings, tmp_path) -> dict:
    env = {**os.environ, "MEMCTX_DATABASE_URL": settings.database_url, "MEMCTX_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "memctx", "eval", *args, "--json"], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _contexts(results: dict) -> dict:
    return {b: (r["evidence_found"], r["evidence_gold"], r["mean_tokens"]) for b, r in results["budgets"].items()}


def _messages(app) -> int:
    with app.pool.connection() as conn:
        return conn.execute("select count(*) as n from memctx.messages").fetchone()["n"]


def test_every_door_gives_the_same_longmemeval_contexts(app, settings, tmp_path):
    path = _longmemeval(tmp_path)
    results = {door: _eval(["longmemeval", str(path), "--budgets", "200,600", "--door", door], settings, tmp_path)
               for door in DOORS}
    assert {door: r["door"] for door, r in results.items()} == {door: door for door in DOORS}
    python = _contexts(results["python"])
    assert python["200"][0] == python["600"][0] == 1  # asked at its date: "last weekend" is the corgi's
    for door in DOORS:
        assert _contexts(results[door]) == python, door
        assert results[door]["budgets"]["600"]["halves"]["odd"]["memctx"] == {"evidence_found": 1, "evidence_gold": 1}


def test_the_proxy_door_leaves_the_conversations_as_they_were(app, settings, tmp_path, locomo_path):
    python = _eval(["locomo", str(locomo_path), "--limit", "12", "--budgets", "1000"], settings, tmp_path)
    stored = _messages(app)
    proxy = _eval(["locomo", str(locomo_path), "--limit", "12", "--budgets", "1000", "--door", "proxy"], settings,
                  tmp_path)
    assert _messages(app) == stored
    assert _contexts(proxy) == _contexts(python) and proxy["door"] == "proxy"
    with app.pool.connection() as conn:
        keys = conn.execute("select count(*) filter (where revoked_at is null) as live, count(*) as made "
                            "from memctx.api_keys").fetchone()
    assert keys["made"] >= 1 and keys["live"] == 0  # the door's keys are revoked when it closes
