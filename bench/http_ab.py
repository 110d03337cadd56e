"""The HTTP context call at 2,000 tokens through two `memctx serve` processes on one database,
alternating: A from another checkout (the previous main, say), B from this one.

    MEMCTX_HOME=/tmp/memctx-eval PYTHONPATH=. python bench/http_ab.py --a ../main [--rounds 2] [--scope conversation]

The database is the one `memctx eval locomo` filled (its LoCoMo conversations, one user). Every
question is asked of both servers, one request at a time, in a random order per question, as the
conversation's owner with an API key; `--scope` sends that scope in every body (left out, each
server's default applies). Prints each server's p50 / p95 in milliseconds, measured at the client,
and B's over A's. Both servers run without their worker.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
import numpy as np

from memctx import keys
from memctx.app import open_app
from memctx.config import Settings
from memctx.db import database_url
from memctx.evaluate.doors import free_port, serve_process
from memctx.evaluate.locomo import load_questions
from memctx.store import DEFAULT_USER


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", type=Path, required=True, help="the other checkout (its root)")
    parser.add_argument("--locomo", type=Path, default=Path("../shared/bench/locomo/locomo-dev.json"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--scope", choices=("conversation", "user"), default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    settings = Settings()
    questions = load_questions(args.locomo)
    with open_app(settings) as app, ExitStack() as stack:
        url = database_url(settings)
        key = keys.create_key(app.pool, DEFAULT_USER, "http_ab")
        stack.callback(keys.revoke_key, app.pool, key.key.id)
        logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="http-ab-")))
        servers = {}
        for name, root in (("A", args.a.resolve()), ("B", Path(__file__).resolve().parents[1])):
            port = str(free_port())
            env = {**os.environ, "MEMCTX_DATABASE_URL": url, "PYTHONPATH": str(root)}
            servers[name] = stack.enter_context(serve_process(
                ["serve", "--host", "127.0.0.1", "--port", port, "--no-migrate", "--no-worker"], env,
                logs / f"{name}.log", cwd=root))
        http = stack.enter_context(httpx.Client(timeout=60, headers={"Authorization": f"Bearer {key.secret}"}))
        body = {"token_budget": args.budget, **({"scope": args.scope} if args.scope else {})}
        rng = random.Random(7)
        times: dict[str, list[float]] = {"A": [], "B": []}
        for _ in range(3):  # warm up: each server's embedder session, pool and caches
            for base in servers.values():
                http.post(f"{base}/v1/conversations/{questions[0].sample_id}/context",
                          json={**body, "query": questions[0].question}).raise_for_status()
        for _ in range(args.rounds):
            for q in questions:
                for name in rng.sample(list(servers), 2):
                    started = time.perf_counter()
                    answer = http.post(f"{servers[name]}/v1/conversations/{q.sample_id}/context",
                                       json={**body, "query": q.question})
                    times[name].append((time.perf_counter() - started) * 1000)
                    answer.raise_for_status()
    out = {name: {"calls": len(t), "p50_ms": round(float(np.percentile(t, 50)), 2),
                  "p95_ms": round(float(np.percentile(t, 95)), 2)} for name, t in times.items()}
    out["B/A"] = {"p50": round(out["B"]["p50_ms"] / out["A"]["p50_ms"], 3),
                  "p95": round(out["B"]["p95_ms"] / out["A"]["p95_ms"], 3)}
    out["load"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
