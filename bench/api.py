"""HTTP door benchmark: context throughput through the API against in-process, and the proxy's overhead.

Ingests LoCoMo-sized conversations (the repo's fixture by default) as one user into a fresh
database `--database` on the configured server (dropped at the end), starts a real uvicorn server
(`memctx serve`) in a child process, and measures in one run:

1. in process: `get_working_context` from `--clients` threads for `--seconds`;
2. through the API: `--clients` concurrent httpx clients (asyncio) POSTing
   /v1/conversations/{c}/context with an API key, for `--seconds` — throughput, p50, p95, and
   the ratio to (1);
3. one call at a time, interleaved: get_working_context on the owner's App and on the caller's
   (`App.for_user`), each with a cached assembler (as the API uses) and a fresh one per call;
   and writing the `context_requests` row — where the API's extra time per call goes;
4. the proxy: a loopback OpenAI-compatible upstream that answers at once (a child process),
   called `--proxy-requests` times one after another directly and through /v1/chat/completions:
   the p50 / p95 the proxy adds (working context, storing the turn, the log).

Queries are the LoCoMo questions, round robin over the conversations, token budget `--budget`.

    python bench/api.py [--locomo PATH] [--clients 32] [--seconds 20] [--server-workers 1] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
import psycopg  # noqa: E402
from psycopg.conninfo import make_conninfo  # noqa: E402

from memctx import db, keys  # noqa: E402
from memctx.app import open_app, prepare_database  # noqa: E402
from memctx.api.observe import record_context  # noqa: E402
from memctx.assemble import assembler_for  # noqa: E402
from memctx.assemble.context import build_assembler  # noqa: E402
from memctx.auth import Caller  # noqa: E402
from memctx.config import Settings  # noqa: E402
from memctx.store.ingest import ingest, load_file  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "locomo-mini.json"
REPLY = {"id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench",
         "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(url: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1.0).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def stop_and_drop(children: list[subprocess.Popen], admin: str, database: str, wait_s: float) -> None:
    """End the run's child processes, then drop its database."""
    for child in children:
        child.terminate()
        child.wait(wait_s)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{database}" with (force)')


def serve_upstream(port: int) -> None:
    """The instant upstream (run in a child process): a fixed completion for every request."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def chat(request):
        await request.body()
        return JSONResponse(REPLY)

    async def models(request):
        return JSONResponse({"object": "list", "data": []})

    app = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/v1/models", models)])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def questions(path: Path) -> list[str]:
    return [q["question"] for sample in json.loads(path.read_text()) for q in sample.get("qa", [])]


def in_process(app, user, conversations: list, queries: list[str], clients: int, seconds: float, budget: int) -> dict:
    assembler = assembler_for(app)
    latencies: list[float] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def run(k: int) -> None:
        i = k
        while time.monotonic() < stop:
            started = time.perf_counter()
            assembler.get_working_context(user, conversations[i % len(conversations)], queries[i % len(queries)], budget)
            with lock:
                latencies.append(time.perf_counter() - started)
            i += clients

    started = time.monotonic()
    threads = [threading.Thread(target=run, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return summary(latencies, time.monotonic() - started)


async def through_api(base: str, key: str, conversations: list, queries: list[str], clients: int, seconds: float,
                      budget: int) -> dict:
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {key}"}, limits=limits,
                                 timeout=60.0) as http:
        stop = time.monotonic() + seconds

        async def run(k: int) -> None:
            nonlocal errors
            i = k
            while time.monotonic() < stop:
                started = time.perf_counter()
                answer = await http.post(f"/v1/conversations/{conversations[i % len(conversations)]}/context",
                                         json={"query": queries[i % len(queries)], "token_budget": budget})
                if answer.status_code != 200:
                    errors += 1
                latencies.append(time.perf_counter() - started)
                i += clients

        started = time.monotonic()
        await asyncio.gather(*(run(k) for k in range(clients)))
        elapsed = time.monotonic() - started
    return {**summary(latencies, elapsed), "errors": errors}


def proxy_overhead(base: str, upstream: str, key: str, queries: list[str], n: int) -> dict:
    body = lambda i: {"model": "bench", "messages": [{"role": "user", "content": queries[i % len(queries)]}]}  # noqa: E731
    timings: dict[str, list[float]] = {"direct": [], "proxy": []}
    with httpx.Client(timeout=60.0) as http:
        for i in range(n + 5):  # the first 5 warm up
            for name, url, headers in (("direct", f"{upstream}/v1/chat/completions", {}),
                                       ("proxy", f"{base}/v1/chat/completions",
                                        {"Authorization": f"Bearer {key}", "X-Memctx-Conversation": "bench-proxy"})):
                started = time.perf_counter()
                answer = http.post(url, json=body(i), headers=headers)
                answer.raise_for_status()
                if i >= 5:
                    timings[name].append(time.perf_counter() - started)
    out = {name: {"p50_ms": round(pct(v, 0.5) * 1000, 1), "p95_ms": round(pct(v, 0.95) * 1000, 1)}
           for name, v in timings.items()}
    out["overhead_p50_ms"] = round(out["proxy"]["p50_ms"] - out["direct"]["p50_ms"], 1)
    out["overhead_p95_ms"] = round(out["proxy"]["p95_ms"] - out["direct"]["p95_ms"], 1)
    out["requests"] = n
    return out


def breakdown(app, user, conversations: list, queries: list[str], budget: int, rounds: int) -> dict:
    """Where an API context call spends more than an in-process one, one call at a time, interleaved:
    the caller's pool (role and JWT claims in every transaction, RLS), a cached assembler (as the
    API uses) against a fresh one per call, and the log row."""
    caller_app = app.for_user(user)
    variants = {
        "owner_cached_assembler": lambda i, q: assembler_for(app).get_working_context(user, conversations[i % 2], q, budget),
        "owner_fresh_assembler": lambda i, q: build_assembler(app).get_working_context(user, conversations[i % 2], q, budget),
        "caller_cached_assembler": lambda i, q: assembler_for(caller_app).get_working_context(user, conversations[i % 2], q,
                                                                                              budget),
        "caller_fresh_assembler": lambda i, q: build_assembler(caller_app).get_working_context(
            user, conversations[i % 2], q, budget),
    }
    wc = assembler_for(app).get_working_context(user, conversations[0], queries[0], budget)
    variants["context_requests_row"] = lambda i, q: record_context(Caller(user, caller_app), conversations[0], wc, "context")
    times: dict[str, list[float]] = {k: [] for k in variants}
    for i in range(rounds + 3):  # the first 3 warm up
        for name, call in variants.items():
            started = time.perf_counter()
            call(i, queries[i % len(queries)])
            if i >= 3:
                times[name].append(time.perf_counter() - started)
    return {name: round(statistics.median(v) * 1000, 1) for name, v in times.items()}


def summary(latencies: list[float], elapsed: float) -> dict:
    return {"requests": len(latencies), "throughput_per_s": round(len(latencies) / elapsed, 1),
            "p50_ms": round(pct(latencies, 0.5) * 1000, 1), "p95_ms": round(pct(latencies, 0.95) * 1000, 1),
            "mean_ms": round(statistics.fmean(latencies) * 1000, 1) if latencies else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=FIXTURE, help="a LoCoMo JSON file (default: the repo's fixture)")
    parser.add_argument("--database", default="memctx_bench_api", help="database created (and dropped) for the run")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each throughput phase")
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--proxy-requests", type=int, default=200)
    parser.add_argument("--breakdown-rounds", type=int, default=40, help="sequential calls per breakdown variant")
    parser.add_argument("--server-workers", type=int, default=1, help="uvicorn worker processes (memctx serve --workers)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve-upstream", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream(args.serve_upstream)
        return

    base_settings = Settings()
    admin = db.database_url(base_settings)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{args.database}" with (force)')
        conn.execute(f'create database "{args.database}"')
    url = make_conninfo(admin, dbname=args.database)
    children: list[subprocess.Popen] = []
    try:
        settings = base_settings.model_copy(update={"database_url": url})
        prepare_database(settings, url)
        user = uuid.uuid4()
        with open_app(settings) as app:
            loaded = ingest(app.store, load_file(args.locomo, "locomo"), user)
            conversations = [r.conversation_id for r in loaded]
            messages = sum(r.messages + r.skipped for r in loaded)
            key = keys.create_key(app.pool, user, "bench").secret
            queries = questions(args.locomo)
            assembler_for(app).get_working_context(user, conversations[0], queries[0], args.budget)  # warm up
            local = in_process(app, user, conversations, queries, args.clients, args.seconds, args.budget)
            costs = breakdown(app, user, conversations, queries, args.budget, args.breakdown_rounds)

        port, upstream_port = free_port(), free_port()
        env = {**os.environ, "MEMCTX_DATABASE_URL": url, "MEMCTX_UPSTREAM_BASE_URL": f"http://127.0.0.1:{upstream_port}/v1",
               "MEMCTX_UPSTREAM_API_KEY": "bench"}
        children.append(subprocess.Popen([sys.executable, __file__, "--serve-upstream", str(upstream_port)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        children.append(subprocess.Popen([sys.executable, "-m", "memctx", "serve", "--port", str(port),
                                          "--workers", str(args.server_workers)], env=env,
                                         cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        base, upstream = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{upstream_port}"
        wait_up(base + "/healthz")
        wait_up(upstream + "/v1/models")
        asyncio.run(through_api(base, key, conversations, queries, args.clients, 2.0, args.budget))  # warm up
        api = asyncio.run(through_api(base, key, conversations, queries, args.clients, args.seconds, args.budget))
        proxy = proxy_overhead(base, upstream, key, queries, args.proxy_requests)
    finally:
        stop_and_drop(children, admin, args.database, 30)

    report = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "conversations": len(conversations), "messages": messages,
        "clients": args.clients, "seconds": args.seconds, "token_budget": args.budget,
        "server_workers": args.server_workers,
        "in_process": local, "api": api,
        "api_over_in_process": round(api["throughput_per_s"] / local["throughput_per_s"], 3),
        "proxy": proxy,
        "breakdown_median_ms": costs,
    }
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"{report['date']}  {report['machine']}  load {report['load_average']}")
    print(f"{report['conversations']} conversations, {report['messages']} messages; {args.clients} clients, "
          f"{args.seconds:g} s per phase, budget {args.budget}, {args.server_workers} server worker(s)")
    for name in ("in_process", "api"):
        r = report[name]
        print(f"  {name:10} {r['throughput_per_s']:7.1f}/s  p50 {r['p50_ms']} ms  p95 {r['p95_ms']} ms  ({r['requests']} requests)")
    print(f"  api / in-process: {report['api_over_in_process']:.1%}")
    print("  one call at a time, median ms: " + ", ".join(f"{k} {v}" for k, v in costs.items()))
    print(f"  proxy: direct p50 {proxy['direct']['p50_ms']} / p95 {proxy['direct']['p95_ms']} ms; through memctx "
          f"p50 {proxy['proxy']['p50_ms']} / p95 {proxy['proxy']['p95_ms']} ms; overhead p50 {proxy['overhead_p50_ms']} / "
          f"p95 {proxy['overhead_p95_ms']} ms")


if __name__ == "__main__":
    main()
