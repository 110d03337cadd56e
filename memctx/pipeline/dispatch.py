"""From inserted messages to queued jobs: LISTEN/NOTIFY, outbox claims, sweeps, and the job itself.

Owns: the dispatcher (LISTENs on `memctx_outbox`, claims pending outbox rows with
`FOR UPDATE SKIP LOCKED`, coalesces them into one job per conversation, sweeps on start and
periodically for rows whose NOTIFY was missed or whose claim expired, queues idle conversations
for their long-term summary, runs a batch of the backfill (superseded summaries left without an
embedding, or messages stored before migration 0025 left without a lexeme count), and reports the
backlog), `run_job`, the one function a worker's actor calls, and `IdleBackfill`, which works
through that backfill while a worker process has no job. It does not know the broker: jobs leave
through a `send` callable.

Correctness does not rest on the queue: a job brings its conversation fully up to date from the
database (memctx.catchup.catch_up), so a lost, duplicated or repeated job costs time, never
consistency; outbox rows are marked processed only after their job finished.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Callable
from uuid import UUID

from memctx import db, metrics
from memctx.pipeline import catchup, embedding, longterm
from memctx.app import App
from memctx.sql import QUERIES
from memctx.store import UnknownConversation, fill_lexeme_counts
from memctx.summarize.types import Summarizer

log = logging.getLogger(__name__)

CHANNEL = "memctx_outbox"
CLAIM_BATCH = 1000


@dataclass(frozen=True)
class Job:
    """Bring one conversation up to date; with `close`, also write its long-term summary."""

    user_id: UUID
    conversation_id: UUID
    close: bool = False
    force: bool = False


@dataclass(frozen=True)
class JobResult:
    catch_up: catchup.CatchUpResult | None
    closed: bool
    marked: int


class _Activity:
    """When this process last ran a job, and how many run now: the idle backfill's signal."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running = 0
        self.last = time.monotonic()

    def __enter__(self) -> None:
        with self._lock:
            self.running += 1

    def __exit__(self, *_) -> None:
        with self._lock:
            self.running -= 1
            self.last = time.monotonic()

    def idle_for(self) -> float:
        with self._lock:
            return 0.0 if self.running else time.monotonic() - self.last


ACTIVITY = _Activity()


def run_job(app: App, user_id: UUID, conversation_id: UUID, *, close: bool = False, force: bool = False,
            summarizer: Summarizer | None = None) -> JobResult:
    """The worker's one job: catch up, close if asked, then mark the outbox rows processed.

    A deleted conversation is not an error (its outbox rows went with it).
    """
    with ACTIVITY:
        return _run_job(app, user_id, conversation_id, close, force, summarizer)


def _run_job(app: App, user_id: UUID, conversation_id: UUID, close: bool, force: bool,
             summarizer: Summarizer | None) -> JobResult:
    with app.pool.connection() as conn:  # the database's clock, as the claims use (workers' clocks may differ)
        started_at = conn.execute("select clock_timestamp() as t").fetchone()["t"]
    try:
        result = catchup.catch_up(app, user_id, conversation_id, summarizer, force_board=force or close)
        closed = False
        if close:
            longterm.close_conversation(app, user_id, conversation_id, summarizer, catch_up_first=False)
            closed = True
    except UnknownConversation:
        return JobResult(None, False, 0)
    except Exception as exc:
        metrics.FAILURES.labels(kind="job").inc()
        with app.pool.connection() as conn:
            conn.execute(QUERIES["record_outbox_error"], {"conversation_id": conversation_id, "user_id": user_id,
                                                          "error": f"{type(exc).__name__}: {exc}"[:2000]})
        raise
    with app.pool.connection() as conn:
        marked = conn.execute(QUERIES["mark_outbox_processed"], {
            "conversation_id": conversation_id, "user_id": user_id, "upto_seq": result.last_seq,
            "started_at": started_at}).rowcount
    return JobResult(result, closed, marked)


def request(app: App, user_id: UUID, conversation_id: UUID, kind: str) -> bool:
    """Ask the worker for 'summarize' or 'close' on a conversation; False if it is not the user's."""
    if kind not in ("summarize", "close"):
        raise ValueError(f"unknown request kind {kind!r}")
    with app.pool.connection() as conn:
        row = conn.execute(QUERIES["enqueue_request"], {"user_id": user_id, "conversation_id": conversation_id,
                                                        "kind": kind}).fetchone()
        if row is not None:
            conn.execute(QUERIES["notify_outbox"], {"conversation_ids": [conversation_id]})
    return row is not None


@dataclass(frozen=True)
class Backlog:
    pending: int
    oldest_s: float
    dead: int  # rows that reached outbox_max_attempts and are left alone
    unembedded_summaries: int = 0  # the summary-embedding backfill's backlog


def backlog(app: App) -> Backlog:
    with app.pool.connection() as conn:
        row = conn.execute(QUERIES["outbox_backlog"], {"max_attempts": app.settings.outbox_max_attempts}).fetchone()
        unembedded = conn.execute(QUERIES["unembedded_summary_count"], {"conversation_id": None}).fetchone()["n"]
    metrics.OUTBOX_BACKLOG.set(row["pending"])
    metrics.OUTBOX_OLDEST_AGE.set(row["oldest_s"])
    metrics.SUMMARIES_UNEMBEDDED.set(unembedded)
    return Backlog(int(row["pending"]), float(row["oldest_s"]), int(row["dead"]), int(unembedded))


def backfill_batch(app: App) -> int:
    """One batch of the idle backfill: summaries to embed, or else messages stored before
    migration 0025 to count the lexemes of; a failure is counted, never raised."""
    try:
        return embedding.backfill_summary_embeddings(app) or fill_lexeme_counts(app.pool, batches=1)
    except Exception:
        metrics.FAILURES.labels(kind="backfill").inc()
        log.exception("idle backfill failed")
        return 0


class _Loop:
    """A background loop in a daemon thread that `stop` ends and waits for: a process that
    exits while onnxruntime embeds in such a thread aborts ("terminate called without an active
    exception"), since the thread cannot take the GIL back during interpreter shutdown."""

    thread_name = "memctx-loop"

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None

    def run(self) -> None:
        raise NotImplementedError

    def start(self) -> threading.Thread:
        self.thread = threading.Thread(target=self.run, name=self.thread_name, daemon=True)
        self.thread.start()
        return self.thread

    def stop(self, timeout: float = 30.0) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(timeout)


class IdleBackfill(_Loop):
    """Embeds superseded summaries, then counts the lexemes of messages stored before 0025, one
    small batch at a time, while this process runs no job.

    Every worker process runs one; the advisory locks of the backfill keep them apart. A job that
    starts meanwhile waits for no one: it shares the cores with at most one batch.
    """

    thread_name = "memctx-backfill"

    def __init__(self, app: App) -> None:
        super().__init__()
        self.app = app

    def run(self) -> None:
        idle_s = self.app.settings.backfill_idle_s
        while not self.stopping.is_set():
            wait = idle_s - ACTIVITY.idle_for()
            if wait > 0:
                self.stopping.wait(min(wait, 1.0))
            elif backfill_batch(self.app) == 0:  # nothing left (or all taken): look again later
                self.stopping.wait(self.app.settings.sweep_interval_s)



class Dispatcher(_Loop):
    """Turns outbox rows into jobs. Any number may run, on any machines: claims never overlap."""

    thread_name = "memctx-dispatcher"

    def __init__(self, app: App, send: Callable[[Job], None], *, name: str | None = None) -> None:
        super().__init__()
        self.app = app
        self.send = send
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self.ready = threading.Event()  # set once LISTEN is active and the start-up sweep is done
        self._failing_since: float | None = None  # when the current run of failures began

    def dispatch_pending(self) -> int:
        """Claim every claimable row now, user by user in one transaction (the claims pipelined:
        one round trip); one job per conversation per claim batch. Returns jobs sent."""
        settings = self.app.settings
        key = {"lease_s": settings.claim_lease_s, "max_attempts": settings.outbox_max_attempts,
               "limit": CLAIM_BATCH, "claimed_by": self.name}
        sent = 0
        while True:
            with self.app.pool.connection() as conn:  # committed before the jobs leave
                users = [r["user_id"] for r in conn.execute(QUERIES["claimable_outbox_users"], key)]
                with conn.pipeline():
                    claims = [conn.execute(QUERIES["claim_outbox"], {**key, "user_id": user}) for user in users]
                claimed = [cur.fetchall() for cur in claims]
            for groups in claimed:
                for g in groups:
                    job = Job(g["user_id"], g["conversation_id"], close=g["close"], force=g["summarize"])
                    self.send(job)
                    metrics.JOBS_DISPATCHED.labels(kind="close" if job.close else "update").inc()
                    sent += 1
            if len(users) < CLAIM_BATCH and all(sum(g["rows"] for g in groups) < CLAIM_BATCH for groups in claimed):
                return sent

    def sweep(self) -> int:
        """Queue idle conversations for closing, claim whatever is pending or expired, purge old rows,
        run one batch of the idle backfill (`backfill_batch`; after dispatching: jobs come first)."""
        settings = self.app.settings
        with self.app.pool.connection() as conn:
            conn.execute(QUERIES["enqueue_idle_closes"], {"idle_s": settings.idle_close_minutes * 60, "limit": 1000})
            conn.execute(QUERIES["purge_processed_outbox"], {"keep_s": settings.outbox_keep_hours * 3600})
        sent = self.dispatch_pending()
        backfill_batch(self.app)
        backlog(self.app)
        return sent

    def run(self) -> None:
        """LISTEN, sweep once, then dispatch on every NOTIFY and sweep every sweep_interval_s."""
        settings = self.app.settings
        while not self.stopping.is_set():
            try:
                self._listen_loop(settings)
            except Exception:  # connection lost or a query failed: reconnect, the sweep catches up
                metrics.FAILURES.labels(kind="dispatch").inc()
                if self._failing_since is None:  # once per outage with its cause; the retries quietly
                    self._failing_since = time.monotonic()
                    log.exception("dispatcher error; reconnecting every 1 s")
                else:
                    log.debug("dispatcher still failing", exc_info=True)
                self.stopping.wait(1.0)

    def _listen_loop(self, settings) -> None:
        with db.connect(self.app.url, settings, autocommit=True) as conn:
            conn.execute(f"listen {CHANNEL}")
            self.sweep()  # after LISTEN: nothing inserted from here on can be missed
            self.ready.set()
            if self._failing_since is not None:
                log.info("dispatcher reconnected", extra={"fields": {
                    "failing_s": round(time.monotonic() - self._failing_since, 1)}})
                self._failing_since = None
            next_sweep = time.monotonic() + settings.sweep_interval_s
            while not self.stopping.is_set():
                timeout = max(0.0, min(next_sweep - time.monotonic(), 1.0))
                woke = any(True for _ in conn.notifies(timeout=timeout, stop_after=1))
                if woke:
                    if settings.dispatch_debounce_ms:  # let a burst land, then claim it as one job
                        time.sleep(settings.dispatch_debounce_ms / 1000)
                    for _ in conn.notifies(timeout=0):
                        pass
                    self.dispatch_pending()
                if time.monotonic() >= next_sweep:
                    self.sweep()
                    next_sweep = time.monotonic() + settings.sweep_interval_s
