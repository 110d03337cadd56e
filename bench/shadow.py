"""The proxy's shadow run on LoCoMo conversations, against live mode on the same turns.

Each conversation is played as a chat app plays it: speaker A's turns are the user's, speaker B's
the assistant's; every run of A's turns is one request of the official `openai` client through
`/v1/chat/completions`, carrying the app's whole history (system prompt, every earlier turn), and
a loopback OpenAI-compatible upstream answers with B's next turns. The same requests go through
two fresh databases, one in shadow mode (`X-Memctx-Mode: shadow`) and one live; after each of
LoCoMo's sessions the worker's job runs on the conversation in both (the same catch-up, at the
same point), so both databases hold the same memory at every request. It reports:

- whether the upstream received, in shadow mode, exactly the client's bytes (every request);
- whether each recorded context (`memctx.shadow_requests.context`) is, message for message and as
  JSON text, what the live run's upstream received for the same request;
- whether the `memctx.shadow_comparison` view's totals match the request log (`context_requests`
  of kind 'shadow' and the `shadow_requests` rows) and the bench's own count of what it sent;
- per conversation and in total: requests, the client's tokens, the context's tokens, their ratio,
  and the share of the client's history messages the context kept whole.

    python bench/shadow.py /work/shared/bench/locomo/locomo-dev.json [--budget 2000] [--conversations N] [--json]

The embedded Postgres of MEMCTX_HOME (or MEMCTX_DATABASE_URL's server) holds the two databases,
dropped at the end unless --keep.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import openai  # noqa: E402
import psycopg  # noqa: E402
import uvicorn  # noqa: E402
from psycopg.conninfo import make_conninfo  # noqa: E402

from memctx.api.app import create_app  # noqa: E402
from memctx.api.shadow import chat_tokens  # noqa: E402
from memctx import db, keys  # noqa: E402
from memctx.app import open_app, prepare_database  # noqa: E402
from memctx.config import Settings  # noqa: E402
from memctx.pipeline.dispatch import run_job  # noqa: E402
from memctx.store.shadow import context_text  # noqa: E402

SYSTEM = "You are a friendly assistant who remembers what the user tells you."


@dataclass
class Exchange:
    """One request of the app: the user's turns, and the assistant's reply the upstream gives."""

    session: int
    user: str
    reply: str


def exchanges(sample: dict[str, Any]) -> Iterator[Exchange | tuple[str, int]]:
    """A LoCoMo conversation as an app's requests, and ("session", n) after each session. A
    session that opens with speaker B's turns adds them as an assistant message with no request."""
    conv = sample["conversation"]
    a = conv["speaker_a"]
    n = 1
    while f"session_{n}" in conv:
        blocks: list[tuple[str, list[str]]] = []
        for turn in conv[f"session_{n}"]:
            role = "user" if turn["speaker"] == a else "assistant"
            if blocks and blocks[-1][0] == role:
                blocks[-1][1].append(turn["text"])
            else:
                blocks.append((role, [turn["text"]]))
        i = 0
        if blocks and blocks[0][0] == "assistant":
            yield Exchange(n, "", "\n".join(blocks[0][1]))  # the assistant speaks first: no request
            i = 1
        while i < len(blocks):
            user = "\n".join(blocks[i][1])
            reply = "\n".join(blocks[i + 1][1]) if i + 1 < len(blocks) else "Good night!"
            yield Exchange(n, user, reply)
            i += 2
        yield ("session", n)
        n += 1


class Upstream:
    """An OpenAI-compatible server on loopback: answers `next_reply`, keeps each request's bytes."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self.next_reply = ""
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                upstream.received.append(raw)
                body = json.dumps({"id": f"chatcmpl-{len(upstream.received)}", "object": "chat.completion",
                                   "created": 0, "model": json.loads(raw)["model"], "choices": [{
                                       "index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": upstream.next_reply}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Served:
    """memctx's API over one database, on uvicorn in a thread, its upstream `upstream`."""

    def __init__(self, url: str, upstream: Upstream, budget: int) -> None:
        self.settings = Settings(database_url=url, upstream_base_url=upstream.url, upstream_api_key="bench",
                                 proxy_default_token_budget=budget, pool_min_size=1, pool_max_size=4)
        self.app = open_app(self.settings)
        config = uvicorn.Config(create_app(self.app, self.settings), host="127.0.0.1", port=0, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.base = f"http://127.0.0.1:{port}/v1"

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.app.close()


@dataclass
class Run:
    """One mode's run: what the client sent, and what the upstream received, per request."""

    sent: list[bytes] = field(default_factory=list)
    received: list[bytes] = field(default_factory=list)
    client_tokens: int = 0
    seconds: float = 0.0


def play(sample: dict[str, Any], served: Served, upstream: Upstream, user: uuid.UUID, mode: str) -> Run:
    run = Run()
    key = keys.create_key(served.app.pool, user).secret
    hooks = {"request": [lambda request: run.sent.append(request.read())]}
    name = f"locomo-{sample.get('sample_id', 'x')}"
    headers = {"X-Memctx-Conversation": name, **({"X-Memctx-Mode": "shadow"} if mode == "shadow" else {})}
    first = len(upstream.received)
    history: list[dict[str, str]] = [{"role": "system", "content": SYSTEM}]
    started = time.perf_counter()
    with openai.OpenAI(base_url=served.base, api_key=key, default_headers=headers,
                       http_client=openai.DefaultHttpxClient(event_hooks=hooks)) as client:
        for step in exchanges(sample):
            if isinstance(step, tuple):  # a session ended: the worker's job, as the worker would run it
                conv = served.app.store.find_conversation(user, name).id
                run_job(served.app, user, conv)
                continue
            if not step.user:
                history.append({"role": "assistant", "content": step.reply})
                continue
            history.append({"role": "user", "content": step.user})
            run.client_tokens += chat_tokens(served.app.counter, history)
            upstream.next_reply = step.reply
            reply = client.chat.completions.create(model="bench", messages=history)
            history.append({"role": "assistant", "content": reply.choices[0].message.content})
    run.seconds = time.perf_counter() - started
    run.received = upstream.received[first:]
    return run


def recorded(url: str, user: uuid.UUID) -> dict[str, Any]:
    """The shadow run's records, the view's totals and the request log's, as service_role reads them."""
    with psycopg.connect(url) as conn:
        rows = conn.execute("select s.context, s.context_sha256, s.client_tokens, s.context_tokens, "
                            "s.history_messages, s.history_kept from memctx.shadow_requests s "
                            "where s.user_id = %s order by s.request_id", (user,)).fetchall()
        view = conn.execute("select coalesce(sum(requests), 0), coalesce(sum(client_tokens), 0), "
                            "coalesce(sum(context_tokens), 0), coalesce(sum(history_messages), 0), "
                            "coalesce(sum(history_kept), 0) from memctx.shadow_comparison where user_id = %s",
                            (user,)).fetchone()
        logged = conn.execute("select count(*) from memctx.context_requests where user_id = %s and kind = 'shadow'",
                              (user,)).fetchone()[0]
    return {"rows": rows, "view": [int(v) for v in view], "logged": logged}


def measure(samples: list[dict[str, Any]], admin_url: str, budget: int, keep: bool) -> dict[str, Any]:
    stamp = uuid.uuid4().hex[:8]
    names = {mode: f"memctx_shadow_bench_{mode}_{stamp}" for mode in ("shadow", "live")}
    urls = {}
    with psycopg.connect(admin_url, autocommit=True) as conn:
        for mode, name in names.items():
            conn.execute(f'create database "{name}"')
            urls[mode] = make_conninfo(admin_url, dbname=name)
            prepare_database(Settings(database_url=urls[mode]), urls[mode])
    upstream = Upstream()
    served = {mode: Served(urls[mode], upstream, budget) for mode in urls}
    per_conversation = []
    checks = {"requests": 0, "bytes_identical": 0, "contexts_equal": 0, "contexts_text_equal": 0,
              "digests_equal": 0, "view_matches_log": True}
    try:
        for sample in samples:
            user = uuid.uuid4()  # the same user id in both databases
            runs = {mode: play(sample, served[mode], upstream, user, mode) for mode in ("shadow", "live")}
            shadow_run, live_run = runs["shadow"], runs["live"]
            found = recorded(urls["shadow"], user)
            rows = found["rows"]
            live_messages = [json.loads(raw)["messages"] for raw in live_run.received]
            n = len(shadow_run.sent)
            assert len(rows) == n == len(live_messages) == len(shadow_run.received), (len(rows), n)
            checks["requests"] += n
            checks["bytes_identical"] += sum(a == b for a, b in zip(shadow_run.sent, shadow_run.received))
            checks["contexts_equal"] += sum(r[0] == m for r, m in zip(rows, live_messages))
            checks["contexts_text_equal"] += sum(context_text(r[0]) == context_text(m) for r, m in zip(rows, live_messages))
            checks["digests_equal"] += sum(r[1] == hashlib.sha256(context_text(m)).hexdigest()
                                           for r, m in zip(rows, live_messages))
            sums = [n, sum(r[2] for r in rows), sum(r[3] for r in rows), sum(r[4] for r in rows), sum(r[5] for r in rows)]
            matches = found["view"] == sums and found["logged"] == n and sums[1] == shadow_run.client_tokens
            checks["view_matches_log"] = checks["view_matches_log"] and matches
            per_conversation.append({
                "conversation": sample.get("sample_id"), "requests": n, "client_tokens": sums[1],
                "context_tokens": sums[2], "context_share": round(sums[2] / sums[1], 4),
                "history_messages": sums[3], "history_kept": sums[4],
                "history_kept_share": round(sums[4] / sums[3], 4) if sums[3] else None,
                "last_request": {"client_tokens": rows[-1][2], "context_tokens": rows[-1][3]},
                "view": found["view"], "logged_shadow_rows": found["logged"], "bench_client_tokens": shadow_run.client_tokens,
                "seconds": {"shadow": round(shadow_run.seconds, 1), "live": round(live_run.seconds, 1)},
                "per_request_ms": {mode: round(1000 * runs[mode].seconds / n, 1) for mode in runs}})
    finally:
        for s in served.values():
            s.close()
        upstream.close()
        if not keep:
            with psycopg.connect(admin_url, autocommit=True) as conn:
                for name in names.values():
                    conn.execute(f'drop database if exists "{name}" with (force)')
    total = {k: sum(c[k] for c in per_conversation) for k in ("requests", "client_tokens", "context_tokens",
                                                              "history_messages", "history_kept")}
    total["context_share"] = round(total["context_tokens"] / total["client_tokens"], 4)
    total["history_kept_share"] = round(total["history_kept"] / total["history_messages"], 4)
    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "budget": budget,
            "checks": checks, "total": total, "conversations": per_conversation,
            "median_per_request_ms": {mode: statistics.median(c["per_request_ms"][mode] for c in per_conversation)
                                      for mode in ("shadow", "live")},
            "databases": names if keep else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("locomo", type=Path, help="a LoCoMo JSON file (a list of samples)")
    parser.add_argument("--budget", type=int, default=2000, help="the proxy's token budget (default 2000)")
    parser.add_argument("--conversations", type=int, default=None, help="only the file's first N conversations")
    parser.add_argument("--keep", action="store_true", help="keep the two databases (their names are printed)")
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    args = parser.parse_args()
    samples = json.loads(args.locomo.read_text())[:args.conversations]
    settings = Settings()
    result = measure(samples, db.database_url(settings), args.budget, args.keep)
    if args.json:
        print(json.dumps(result, indent=2, default=str))
        return
    checks, total = result["checks"], result["total"]
    print(f"requests {checks['requests']}: upstream got the client's bytes {checks['bytes_identical']}, recorded "
          f"context = live's messages {checks['contexts_equal']} (as JSON text {checks['contexts_text_equal']}, "
          f"digest {checks['digests_equal']}); view totals = request log: {checks['view_matches_log']}")
    for c in result["conversations"]:
        print(f"{c['conversation']}: {c['requests']} requests, client {c['client_tokens']:,} tokens, memctx "
              f"{c['context_tokens']:,} ({c['context_share']:.1%}), history kept whole {c['history_kept_share']:.1%}")
    print(f"total: client {total['client_tokens']:,} tokens, memctx {total['context_tokens']:,} "
          f"({total['context_share']:.1%}), history kept whole {total['history_kept_share']:.1%}")


if __name__ == "__main__":
    main()
