"""Chat turns per second one server serves: appends and contexts under concurrent conversations, worker running.

A turn is what a chat app sends memctx per exchange: one append (POST
/v1/conversations/{c}/messages with the user's message and the assistant's reply) and one context
(POST /v1/conversations/{c}/context for the next user message). `--conversations` conversations,
each its own user with its own API key, run their turns concurrently (one asyncio httpx client, one
connection per conversation) against a real `memctx serve` on loopback, which runs the background
worker as it does by default. Each conversation starts with `--history` turns of a LoCoMo
conversation (stored in process, embedded) and goes on with the turns after them; the queries are
that conversation's LoCoMo questions.

Each arm gets a fresh database `--database`_<arm> (dropped at the end), its own server, a wait until
the worker has caught up with the seeded history, `--warmup` seconds of load not counted, then
`--seconds` of load. Reported per arm: turns per second, p50 / p95 / p99 of the append, the context
and the whole turn, failed calls, and the worker's lag: the outbox backlog sampled every
`--sample-s` during the load (pending rows, age of the oldest), the messages still without an
embedding when the load ends, the time the worker then needs to drain it, and how long the rows
written during the load waited (processed_at - created_at, p50 / p95). And the CPU every turn costs: of
the server's process (its threads: the API's, the worker's, the embedder's) and of the database's
backends, from the load's start until the worker has drained it, over every turn sent (warm-up
included): what one turn takes of the machine, whatever else is running on it.

Arms (`--arms`) are where an append's messages are embedded (MEMCTX_APPEND_EMBEDDING): `request`
(inside the append) and `worker` (by the background worker; memory search finds them by full text
until then); with `:process` the worker runs as its own process (`memctx serve --no-worker` and
`memctx worker`) instead of a thread of the server's. `--rounds 2` runs them A B B A, so that a
drift of the machine's load weighs on both.

`--rate 2,4,8` offers each rate in turn to the same server (each load after the worker has caught
up with the one before): the rate at which the p95 turn latency still meets a target, found in one
run.

With `--check-messages M` the run is a fixed amount of work instead of a timed load, and a check of
what the database holds after it: all conversations at once, each appending M messages one request
at a time (no `id`, so a message stored twice would show) and asking `--check-contexts` contexts
(2) on the way; then, once the worker has drained, every conversation must hold exactly the
messages it sent, in order, once each, with 0 failed calls, and all of it summarized (outbox
drained, every message embedded, every board current, every summary chain as the rules give it).
It prints p50 / p95 / p99 per call and each invariant, and exits 1 if one fails.

    python bench/turns.py [--locomo PATH] [--conversations 64] [--rate TURNS_PER_S[,…]] [--seconds 20]
                          [--arms request,worker] [--rounds 1] [--json]
    python bench/turns.py --conversations 200 --check-messages 20 [--check-contexts 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
import numpy as np  # noqa: E402
import psycopg  # noqa: E402
from psycopg.conninfo import make_conninfo  # noqa: E402
from psycopg.rows import dict_row  # noqa: E402

from bench.api import free_port, pct, stop_and_drop, wait_up  # noqa: E402
from memctx import db, keys  # noqa: E402
from memctx.app import open_app, prepare_database  # noqa: E402
from memctx.config import Settings  # noqa: E402
from memctx.sql import QUERIES  # noqa: E402
from memctx.store.ingest import ConversationInput, load_file  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "locomo-mini.json"
ARMS = ("request", "worker", "request:process", "worker:process")
MAX_CONVERSATIONS = 512  # one connection and one user each: beyond this the bench measures the client
MAX_SECONDS = 300.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=FIXTURE, help="a LoCoMo JSON file (default: the repo's fixture)")
    parser.add_argument("--database", default="memctx_bench_turns", help="prefix of the databases created and dropped")
    parser.add_argument("--conversations", type=int, default=64, help="concurrent conversations (one user each)")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured load per arm and round")
    parser.add_argument("--warmup", type=float, default=3.0, help="load before the measured part, not counted")
    parser.add_argument("--rate", default=None,
                        help="open loop: turns per second offered, spread over the conversations; several "
                             "(2,4,8) run one after the other on the same server (default: closed loop, each "
                             "conversation starts its next turn when the last one ends)")
    parser.add_argument("--history", type=int, default=None,
                        help="turns stored in each conversation before the load (default 40; 0 with --check-messages)")
    parser.add_argument("--check-messages", type=int, default=0, metavar="M",
                        help="instead of a timed load: each conversation appends M messages, one per request, and "
                             "asks --check-contexts contexts on the way; then the database is checked (every "
                             "message stored once, in order, all of them summarized), and a failed check exits 1")
    parser.add_argument("--check-contexts", type=int, default=2, help="contexts each conversation asks (--check-messages)")
    parser.add_argument("--budget", type=int, default=2000, help="the context's token budget")
    parser.add_argument("--arms", default="worker", help=f"comma-separated, of: {', '.join(ARMS)} (default: "
                                                           "the default setting, worker)")
    parser.add_argument("--rounds", type=int, default=1, help="1: each arm once; 2: A B B A")
    parser.add_argument("--drain-timeout", type=float, default=120.0, help="longest wait for the worker to catch up")
    parser.add_argument("--sample-s", type=float, default=0.5, help="seconds between backlog samples")
    parser.add_argument("--timeout", type=float, default=60.0, help="per request")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not 1 <= args.conversations <= MAX_CONVERSATIONS:
        parser.error(f"--conversations must be between 1 and {MAX_CONVERSATIONS}, not {args.conversations}")
    if not 0 < args.seconds <= MAX_SECONDS:
        parser.error(f"--seconds must be more than 0 and at most {MAX_SECONDS:g}, not {args.seconds:g}")
    if args.rate is not None:
        try:
            args.rate = [float(r) for r in args.rate.split(",")]
        except ValueError:
            parser.error(f"--rate takes turns per second, comma-separated, not {args.rate!r}")
        for r in args.rate:
            if not r > 0:
                parser.error(f"--rate must be more than 0 turns per second, not {r:g}")
    if args.history is None:
        args.history = 0 if args.check_messages else 40
    if args.check_messages < 0 or args.check_contexts < 0:
        parser.error("--check-messages and --check-contexts cannot be negative")
    if args.warmup < 0 or args.history < 0 or args.rounds not in (1, 2):
        parser.error("--warmup and --history cannot be negative, and --rounds is 1 or 2")
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = [a for a in arms if a not in ARMS]
    if not arms or unknown or len(set(arms)) != len(arms):
        parser.error(f"--arms takes distinct names of {', '.join(ARMS)}; got {args.arms!r}")
    args.arms = arms
    args.order = arms + arms[::-1] if args.rounds == 2 else arms
    return args


@dataclass
class Script:
    """One conversation's part: its seeded history, the turns it appends and the questions it asks."""

    history: list  # NewMessage
    turns: list[list]  # each: the messages one append sends
    questions: list[str]


def scripts(path: Path, conversations: int, history: int) -> list[Script]:
    """Conversation k plays LoCoMo conversation k mod n, starting `history` turns in (a later
    offset for each time the file is reused, so no two conversations send the same texts)."""
    samples = load_file(path, "locomo")
    questions = {s["sample_id"]: [q["question"] for q in s.get("qa", [])] for s in json.loads(path.read_text())}
    out = []
    for k in range(conversations):
        source: ConversationInput = samples[k % len(samples)]
        messages = source.messages
        shift = (k // len(samples)) * 7 % max(1, len(messages) - 2 * history)
        ordered = messages[shift:] + messages[:shift]
        pairs = [ordered[i:i + 2] for i in range(2 * history, len(ordered) - 1, 2)]
        asked = questions.get(source.external_id) or [m.text for m in messages[:20]]
        out.append(Script(ordered[:2 * history], pairs, asked))
    return out


def seed(settings: Settings, plays: list[Script], vectors: dict) -> tuple[list[str], list[str]]:
    """Each conversation (its own user) with its history, embedded as ingest embeds it; returns the
    conversations' external ids and their users' API keys. `vectors` keeps the embeddings of the
    texts for the next arm."""
    names, secrets = [], []
    with open_app(settings) as app:
        texts = sorted({m.text for p in plays for m in p.history} - vectors.keys())
        if texts:
            vectors.update(zip(texts, app.embedder.embed(texts)))
        for k, play in enumerate(plays):
            user = uuid.uuid4()
            name = f"bench-turns-{k}"
            conversation = app.store.create_conversation(user, external_id=name)
            if play.history:
                given = np.stack([vectors[m.text] for m in play.history])
                app.store.append_messages(user, conversation.id, play.history, embeddings=given)
            names.append(name)
            secrets.append(keys.create_key(app.pool, user, "bench").secret)
    return names, secrets


def backlog(conn: psycopg.Connection, max_attempts: int) -> tuple[int, float]:
    row = conn.execute(QUERIES["outbox_backlog"], {"max_attempts": max_attempts}).fetchone()
    return int(row["pending"]), float(row["oldest_s"])


def wait_drained(url: str, max_attempts: int, timeout_s: float) -> float | None:
    """Seconds until the outbox has nothing pending (None: still pending after `timeout_s`)."""
    started = time.monotonic()
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        while time.monotonic() - started < timeout_s:
            if backlog(conn, max_attempts)[0] == 0:
                return time.monotonic() - started
            time.sleep(0.2)
    return None


@dataclass
class Load:
    append: list[float] = field(default_factory=list)
    context: list[float] = field(default_factory=list)
    turn: list[float] = field(default_factory=list)
    failed: dict[str, int] = field(default_factory=dict)
    elapsed: float = 0.0


async def run_load(base: str, names: list[str], secrets: list[str], plays: list[Script], budget: int,
                   warmup: float, seconds: float, timeout: float, progress: list[int], rate: float | None) -> Load:
    """Every conversation runs turns back to back until the time is up; a turn counts if it ends
    within the measured `seconds` after the warm-up (a closed loop: with N conversations there are
    always N turns in flight). Given `rate`, the loop is open: conversation k starts its turns on a
    schedule of rate/N per second (staggered), or at once when it is behind it, so that both arms
    of an A/B are offered the same turns. `progress[k]` is conversation k's next turn."""
    load = Load()
    limits = httpx.Limits(max_connections=len(names), max_keepalive_connections=len(names))
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=timeout) as http:
        begin = time.monotonic()
        counted, stop = begin + warmup, begin + warmup + seconds

        async def converse(k: int) -> None:
            headers = {"Authorization": f"Bearer {secrets[k]}"}
            play = plays[k]
            period = len(names) / rate if rate else 0.0
            due = begin + period * k / len(names)
            while time.monotonic() < stop and progress[k] < len(play.turns):
                if period:
                    await asyncio.sleep(max(0.0, due - time.monotonic()))
                    due += period
                    if time.monotonic() >= stop:
                        break
                i = progress[k]
                progress[k] += 1
                sent = [{"role": m.role, "content": m.text, "id": f"load-{i}-{j}"} for j, m in enumerate(play.turns[i])]
                t0 = time.perf_counter()
                appended = await http.post(f"/v1/conversations/{names[k]}/messages", json={"messages": sent},
                                           headers=headers)
                t1 = time.perf_counter()
                context = await http.post(f"/v1/conversations/{names[k]}/context", headers=headers,
                                          json={"query": play.questions[i % len(play.questions)], "token_budget": budget})
                t2 = time.perf_counter()
                if not counted <= time.monotonic() <= stop:
                    continue
                for what, answer, ok in (("append", appended, 201), ("context", context, 200)):
                    if answer.status_code != ok:
                        load.failed[what] = load.failed.get(what, 0) + 1
                load.append.append(t1 - t0)
                load.context.append(t2 - t1)
                load.turn.append(t2 - t0)

        await asyncio.gather(*(converse(k) for k in range(len(names))))
        load.elapsed = seconds
    return load


def sample_backlog(url: str, max_attempts: int, every_s: float, stop: threading.Event, out: list) -> None:
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        while not stop.wait(every_s):
            out.append(backlog(conn, max_attempts))


def quantiles(values: list[float]) -> dict:
    return {f"p{q}_ms": round(pct(values, q / 100) * 1000, 1) for q in (50, 95, 99)}


@dataclass
class Served:
    """One arm's fresh database, seeded, and its server on loopback."""

    url: str
    base: str
    names: list[str]
    secrets: list[str]
    settings: Settings
    pids: list[int]  # the server's process (and the worker's, for a `:process` arm)


@contextmanager
def served(arm: str, base_settings: Settings, args: argparse.Namespace, plays: list[Script],
           vectors: dict) -> Iterator[Served]:
    """A fresh database for `arm`, migrated and seeded, and `memctx serve` (with the worker in its
    process, or beside it for a `:process` arm) answering /readyz; all of it gone at the end."""
    admin = db.database_url(base_settings)
    embedding, _, placement = arm.partition(":")
    name = f"{args.database}_{arm.replace(':', '_')}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}" with (force)')
        conn.execute(f'create database "{name}"')
    url = make_conninfo(admin, dbname=name)
    settings = base_settings.model_copy(update={"database_url": url})
    children: list[subprocess.Popen] = []
    try:
        prepare_database(settings, url)
        names, secrets = seed(settings, plays, vectors)
        port = free_port()
        env = {**os.environ, "MEMCTX_DATABASE_URL": url, "MEMCTX_APPEND_EMBEDDING": embedding}
        serve = ["serve", "--host", "127.0.0.1", "--port", str(port)] + (["--no-worker"] if placement else [])
        for command in [serve] + ([["worker"]] if placement else []):
            children.append(subprocess.Popen([sys.executable, "-m", "memctx", *command], env=env, cwd=ROOT,
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        base = f"http://127.0.0.1:{port}"
        wait_up(base + "/readyz")  # 503 until the embedder has loaded
        yield Served(url, base, names, secrets, settings, [c.pid for c in children])
    finally:
        stop_and_drop(children, admin, name, 60)


def run_arm(arm: str, base_settings: Settings, args: argparse.Namespace, plays: list[Script], vectors: dict) -> list[dict]:
    """One load per rate of `--rate` (one closed-loop load without it) against one server, each
    after the worker has caught up with the one before; the conversations go on where they were."""
    with served(arm, base_settings, args, plays, vectors) as server:
        seeded_drain = wait_drained(server.url, server.settings.outbox_max_attempts, args.drain_timeout)
        progress = [0] * len(plays)
        return [{"arm": arm, "rate": rate, **measure(server, args, plays, progress, rate),
                 "seeded_history_drain_s": None if seeded_drain is None else round(seeded_drain, 1)}
                for rate in args.rate or [None]]


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """User + system CPU seconds of each process still running (all its threads: the API's,
    the in-process worker's and the embedder's native ones)."""
    out = {}
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return out


def backends(url: str) -> list[int]:
    with psycopg.connect(url, autocommit=True) as conn:
        return [r[0] for r in conn.execute("select pid from pg_stat_activity where datname = current_database() "
                                           "and pid <> pg_backend_pid()")]


def cpu_used(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(t - before.get(pid, 0.0) for pid, t in after.items())


def measure(server: Served, args: argparse.Namespace, plays: list[Script], progress: list[int],
            rate: float | None) -> dict:
    url, max_attempts = server.url, server.settings.outbox_max_attempts
    cpu_before = cpu_seconds(server.pids), cpu_seconds(backends(url))
    started_before = sum(progress)
    samples: list[tuple[int, float]] = []
    stop = threading.Event()
    sampler = threading.Thread(target=sample_backlog, args=(url, max_attempts, args.sample_s, stop, samples))
    load_started = datetime.now(timezone.utc)
    sampler.start()
    cpu = time.process_time()
    try:
        load = asyncio.run(run_load(server.base, server.names, server.secrets, plays, args.budget, args.warmup,
                                    args.seconds, args.timeout, progress, rate))
    finally:
        stop.set()
        sampler.join()
    cpu = time.process_time() - cpu  # the bench's own (client) CPU: it shares the machine
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        unembedded = conn.execute("select count(*) as n from memctx.messages "
                                  "where embedding is null and text <> ''").fetchone()["n"]
    drain = wait_drained(url, max_attempts, args.drain_timeout)
    # the CPU of every turn sent (warm-up included), the worker's share too, until it has drained them
    all_turns = max(1, sum(progress) - started_before)
    processes = cpu_seconds(server.pids)
    server_cpu = cpu_used(cpu_before[0], {pid: t for pid, t in processes.items() if pid == server.pids[0]})
    worker_cpu = cpu_used(cpu_before[0], {pid: t for pid, t in processes.items() if pid != server.pids[0]})
    database_cpu = cpu_used(cpu_before[1], cpu_seconds(backends(url)))
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        waited = [r["s"] for r in conn.execute(
            "select extract(epoch from processed_at - created_at)::float8 as s from memctx.outbox "
            "where created_at >= %s and processed_at is not null", (load_started,))]
    pending = [p for p, _ in samples]
    return {
        "turns": len(load.turn), "turns_per_s": round(len(load.turn) / load.elapsed, 2),
        # the same turns over the load and the worker's drain after it: all their work done
        "turns_per_s_drained": None if drain is None else round(len(load.turn) / (load.elapsed + drain), 2),
        "failed": load.failed, "client_cpu_s": round(cpu, 1),
        "cpu_ms_per_turn": {"server": round(server_cpu / all_turns * 1000, 1),
                            **({"worker_process": round(worker_cpu / all_turns * 1000, 1)} if len(server.pids) > 1 else {}),
                            "postgres": round(database_cpu / all_turns * 1000, 1), "turns": all_turns},
        "append": quantiles(load.append), "context": quantiles(load.context), "turn": quantiles(load.turn),
        "backlog": {
            "pending_max": max(pending, default=0),
            "pending_mean": round(sum(pending) / len(pending), 1) if pending else 0,
            "pending_at_end": pending[-1] if pending else 0,
            "oldest_max_s": round(max((o for _, o in samples), default=0.0), 2),
            "unembedded_at_end": int(unembedded),
            "drain_after_load_s": None if drain is None else round(drain, 1),
            "waited_p50_s": round(pct(waited, 0.5), 2) if waited else None,
            "waited_p95_s": round(pct(waited, 0.95), 2) if waited else None,
        },
    }


# The check mode: a fixed amount of work, then the database is checked ------------------------

@dataclass
class Checked:
    sent: list[list[str]]  # per conversation, the texts appended, in order
    append: list[float] = field(default_factory=list)
    context: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    elapsed: float = 0.0


def check_messages(play: Script, count: int) -> list:
    """The `count` messages a conversation appends in check mode: its turns after the history."""
    messages = [m for turn in play.turns for m in turn][:count]
    if len(messages) < count:
        raise SystemExit(f"a conversation of {len(messages)} messages after its history cannot append {count}: "
                         "lower --check-messages or --history")
    return messages


async def run_check_load(base: str, names: list[str], secrets: list[str], plays: list[Script], messages_each: int,
                         contexts_each: int, budget: int, timeout: float) -> Checked:
    """All conversations at once, each appending its messages one request at a time (no `id`: a
    message stored twice would show as a duplicate, not be skipped) and asking its contexts after
    equal shares of them. Any answer other than 201 / 200, or no answer, is an error."""
    sent = [[m.text for m in check_messages(play, messages_each)] for play in plays]
    out = Checked(sent)
    limits = httpx.Limits(max_connections=len(names), max_keepalive_connections=len(names))
    ask_after = {round(messages_each * (j + 1) / contexts_each) for j in range(contexts_each)} if contexts_each else set()

    async def call(what: str, http: httpx.AsyncClient, path: str, body: dict, ok: int, headers: dict) -> None:
        started = time.perf_counter()
        try:
            answer = await http.post(path, json=body, headers=headers)
            failure = None if answer.status_code == ok else f"{what} {answer.status_code}"
        except httpx.HTTPError as exc:
            failure = f"{what} {type(exc).__name__}"
        (out.append if what == "append" else out.context).append(time.perf_counter() - started)
        if failure:
            out.errors[failure] = out.errors.get(failure, 0) + 1

    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=timeout) as http:
        async def converse(k: int) -> None:
            headers = {"Authorization": f"Bearer {secrets[k]}"}
            messages = check_messages(plays[k], messages_each)
            asked = 0
            for i, m in enumerate(messages, 1):
                await call("append", http, f"/v1/conversations/{names[k]}/messages",
                           {"messages": [{"role": m.role, "content": m.text}]}, 201, headers)
                if i in ask_after:
                    question = plays[k].questions[asked % len(plays[k].questions)]
                    asked += 1
                    await call("context", http, f"/v1/conversations/{names[k]}/context",
                               {"query": question, "token_budget": budget}, 200, headers)

        started = time.monotonic()
        await asyncio.gather(*(converse(k) for k in range(len(names))))
        out.elapsed = time.monotonic() - started
    return out


def wait_summarized(url: str, timeout_s: float) -> float | None:
    """Seconds until the outbox has nothing pending and every message is embedded (None: timeout)."""
    started = time.monotonic()
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        while time.monotonic() - started < timeout_s:
            left = conn.execute("select (select count(*) from memctx.outbox where processed_at is null) + "
                                "(select count(*) from memctx.messages where embedding is null and text <> '') "
                                "as n").fetchone()["n"]
            if left == 0:
                return time.monotonic() - started
            time.sleep(0.25)
    return None


def check_stored(url: str, names: list[str], expected: list[list[str]], settings: Settings) -> dict:
    """What the database holds against what was sent: each conversation's messages, in seq order,
    are exactly the expected texts (none lost, none twice, none out of order, seqs 1..n), and all of
    it summarized: nothing pending or dead in the outbox, every message embedded, every board
    current and every summary chain the one the rules give for its message count."""
    from collections import Counter

    from memctx.pipeline.catchup import chain_params, read_chain
    from memctx.summarize.chain import expected_chain

    params, every = chain_params(settings), settings.board_update_frequency
    found = {"conversations": len(names), "expected": sum(map(len, expected)), "stored": 0, "lost": 0,
             "duplicated": 0, "out_of_order": 0, "missing_conversations": 0, "boards_behind": 0, "chains_off": 0}
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        rows = {r["external_id"]: r for r in conn.execute(
            "select c.external_id, c.id, c.user_id, c.last_seq, coalesce(b.last_seq, 0) as board_seq, "
            "       array(select m.text from memctx.messages m where m.conversation_id = c.id "
            "              and m.user_id = c.user_id order by m.seq) as texts, "
            "       array(select m.seq from memctx.messages m where m.conversation_id = c.id "
            "              and m.user_id = c.user_id order by m.seq) as seqs "
            "  from memctx.conversations c left join memctx.summary_boards b "
            "    on b.conversation_id = c.id and b.user_id = c.user_id "
            " where c.external_id = any(%s)", (names,))}
        for name, want in zip(names, expected):
            row = rows.get(name)
            if row is None:
                found["missing_conversations"] += 1
                found["lost"] += len(want)
                continue
            got = row["texts"]
            found["stored"] += len(got)
            found["lost"] += sum((Counter(want) - Counter(got)).values())
            found["duplicated"] += sum((Counter(got) - Counter(want)).values())
            found["out_of_order"] += int(Counter(got) == Counter(want) and got != want)
            if row["seqs"] != list(range(1, len(got) + 1)) or row["last_seq"] != len(got):
                found["out_of_order"] += 1
            found["boards_behind"] += int(row["board_seq"] < row["last_seq"] - row["last_seq"] % every)
            chain = [(c.level, c.first_seq, c.last_seq) for c in read_chain(conn, row["user_id"], row["id"])]
            found["chains_off"] += int(chain != [(e.level, e.first_seq, e.last_seq)
                                                 for e in expected_chain(len(got), params)])
        outbox = conn.execute("select count(*) filter (where processed_at is null) as pending, "
                              "count(*) filter (where processed_at is null and attempts >= %s) as dead "
                              "from memctx.outbox", (settings.outbox_max_attempts,)).fetchone()
        found["outbox_pending"], found["outbox_dead"] = outbox["pending"], outbox["dead"]
        found["unembedded"] = conn.execute("select count(*) as n from memctx.messages "
                                           "where embedding is null and text <> ''").fetchone()["n"]
    found["stored_once"] = (found["stored"] == found["expected"] and not found["lost"] and not found["duplicated"]
                            and not found["out_of_order"] and not found["missing_conversations"])
    found["summarized"] = not (found["outbox_pending"] or found["outbox_dead"] or found["unembedded"]
                               or found["boards_behind"] or found["chains_off"])
    return found


def run_check(arm: str, base_settings: Settings, args: argparse.Namespace, plays: list[Script], vectors: dict) -> dict:
    with served(arm, base_settings, args, plays, vectors) as server:
        seeded = wait_summarized(server.url, args.drain_timeout)
        expected_history = [[m.text for m in play.history] for play in plays]
        load = asyncio.run(run_check_load(server.base, server.names, server.secrets, plays, args.check_messages,
                                          args.check_contexts, args.budget, args.timeout))
        drain = wait_summarized(server.url, args.drain_timeout)
        found = check_stored(server.url, server.names, [h + s for h, s in zip(expected_history, load.sent)],
                             server.settings)
    found["no_errors"] = not load.errors
    return {
        "arm": arm, "appends": len(load.append), "contexts": len(load.context), "errors": load.errors,
        "elapsed_s": round(load.elapsed, 1), "appends_per_s": round(len(load.append) / load.elapsed, 1),
        "append": quantiles(load.append), "context": quantiles(load.context),
        "seeded_history_drain_s": None if seeded is None else round(seeded, 1),
        "summarized_after_load_s": None if drain is None else round(drain, 1),
        "invariants": found, "ok": found["no_errors"] and found["stored_once"] and found["summarized"],
    }


def print_check(report: dict) -> None:
    for r in report["runs"]:
        f = r["invariants"]
        print(f"  {r['arm']}: {r['appends']} appends ({r['appends_per_s']}/s), {r['contexts']} contexts in "
              f"{r['elapsed_s']} s; errors {r['errors'] or 0}")
        for what in ("append", "context"):
            q = r[what]
            print(f"    {what:8} p50 {q['p50_ms']} / p95 {q['p95_ms']} / p99 {q['p99_ms']} ms")
        print(f"    stored {f['stored']} of {f['expected']} messages: lost {f['lost']}, duplicated {f['duplicated']}, "
              f"out of order {f['out_of_order']}, conversations missing {f['missing_conversations']}")
        print(f"    summarized {r['summarized_after_load_s']} s after the load: outbox pending {f['outbox_pending']} "
              f"(dead {f['outbox_dead']}), unembedded {f['unembedded']}, boards behind {f['boards_behind']}, "
              f"chains off {f['chains_off']} of {f['conversations']}")
        checks = ("no_errors", "stored_once", "summarized")
        print("    " + ", ".join(f"{c}: {'ok' if f[c] else 'FAILED'}" for c in checks))


def where_and_when(load_before: list[float]) -> dict:
    return {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
            "load_average": {"before": load_before, "after": [round(x, 2) for x in os.getloadavg()]}}


def printed(report: dict, as_json: bool) -> bool:
    """Print the report as JSON (True: nothing more to print), or its first line."""
    if as_json:
        print(json.dumps(report, indent=1))
        return True
    load = report["load_average"]
    print(f"{report['date']}  {report['machine']}  load {load['before']} -> {load['after']}")
    return False


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    plays = scripts(args.locomo, args.conversations, args.history)
    load_before = [round(x, 2) for x in os.getloadavg()]
    vectors: dict = {}
    if args.check_messages:
        return check_main(args, plays, load_before, vectors)
    results = [run for arm in args.order for run in run_arm(arm, Settings(), args, plays, vectors)]
    report = {
        **where_and_when(load_before), "conversations": args.conversations, "rate": args.rate, "seconds": args.seconds, "history_turns": args.history,
        "token_budget": args.budget, "runs": results,
    }
    if len(args.arms) == 2 and len(args.rate or [None]) == 1:
        a, b = args.arms
        mean = lambda arm, get: sum(get(r) for r in results if r["arm"] == arm) / args.rounds  # noqa: E731
        report[f"{b}_over_{a}"] = {
            what: round(mean(b, get) / mean(a, get), 3) for what, get in (
                ("turns_per_s", lambda r: r["turns_per_s"]),
                ("turns_per_s_drained", lambda r: r["turns_per_s_drained"] or float("nan")), ("turn_p50", lambda r: r["turn"]["p50_ms"]),
                ("turn_p95", lambda r: r["turn"]["p95_ms"]), ("append_p50", lambda r: r["append"]["p50_ms"]),
                ("append_p95", lambda r: r["append"]["p95_ms"]), ("context_p95", lambda r: r["context"]["p95_ms"]),
                ("context_p50", lambda r: r["context"]["p50_ms"]))}
    if printed(report, args.json):
        return report
    print(f"{args.conversations} conversations, "
          f"{'/'.join(f'{r:g}' for r in args.rate) + ' turns/s offered' if args.rate else 'closed loop'}, "
          f"{args.seconds:g} s per run (+{args.warmup:g} s warm-up), "
          f"{args.history} turns of history each, budget {args.budget}")
    for r in results:
        b = r["backlog"]
        offered = f" ({r['rate']:g}/s offered)" if r["rate"] else ""
        print(f"  {r['arm']:8} {r['turns_per_s']:7.2f} turns/s{offered} ({r['turns']} turns, failed {r['failed'] or 0}); "
              f"{r['turns_per_s_drained']} turns/s counting the worker's drain after the load")
        for what in ("append", "context", "turn"):
            q = r[what]
            print(f"           {what:8} p50 {q['p50_ms']} / p95 {q['p95_ms']} / p99 {q['p99_ms']} ms")
        c = r["cpu_ms_per_turn"]
        worker = f", worker process {c['worker_process']} ms" if "worker_process" in c else " (the worker's included)"
        print(f"           CPU per turn: server {c['server']} ms{worker}, Postgres {c['postgres']} ms")
        print(f"           backlog: pending max {b['pending_max']} (mean {b['pending_mean']}, at the end "
              f"{b['pending_at_end']}), oldest max "
              f"{b['oldest_max_s']} s; {b['unembedded_at_end']} unembedded at the end, drained in "
              f"{b['drain_after_load_s']} s; rows waited p50 {b['waited_p50_s']} / p95 {b['waited_p95_s']} s")
    for key, ratios in report.items():
        if key.endswith("_over_" + args.arms[0]):
            print(f"  {key}: " + ", ".join(f"{k} {v}" for k, v in ratios.items()))
    return report


def check_main(args: argparse.Namespace, plays: list[Script], load_before: list[float], vectors: dict) -> dict:
    results = [run_check(arm, Settings(), args, plays, vectors) for arm in args.arms]
    report = {
        **where_and_when(load_before), "conversations": args.conversations, "messages_each": args.check_messages,
        "contexts_each": args.check_contexts, "history_turns": args.history, "token_budget": args.budget,
        "runs": results, "ok": all(r["ok"] for r in results),
    }
    if printed(report, args.json):
        return report
    print(f"{args.conversations} conversations at once, each appending {args.check_messages} messages one per "
          f"request and asking {args.check_contexts} contexts (budget {args.budget}), {args.history} turns of "
          f"history each")
    print_check(report)
    return report


if __name__ == "__main__":
    sys.exit(0 if main().get("ok", True) else 1)
