"""`memctx worker`: Dramatiq workers plus the outbox dispatcher, in one process (or N).

Each process runs `worker_threads` Dramatiq worker threads on the configured broker and an idle
backfill thread (embeds superseded summaries while no job runs); the first one also runs the
dispatcher (LISTEN/NOTIFY + outbox claims) unless told not to. Extra processes
(`worker_processes` > 1) are started as children that exit when their parent goes away.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading

import dramatiq

from memctx import metrics
from memctx.app import open_app
from memctx.config import Settings
from memctx.pipeline.dispatch import Dispatcher, IdleBackfill
from memctx.pipeline.user_index import UserIndexes
from memctx.worker.actors import declare
from memctx.worker.broker import make_broker

log = logging.getLogger("memctx.worker")


def _watch_parent(parent: int, stop: threading.Event) -> None:
    while not stop.wait(1.0):
        if os.getppid() != parent:
            log.warning("parent process %s is gone; stopping", parent)
            stop.set()


def run(settings: Settings, *, dispatch: bool = True, processes: int | None = None, threads: int | None = None,
        stop: threading.Event | None = None) -> None:
    """Run until SIGTERM/SIGINT (or `stop` is set)."""
    stop = stop or threading.Event()
    processes = processes or settings.worker_processes
    threads = threads or settings.worker_threads
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    parent = os.environ.get("MEMCTX_WORKER_PARENT")
    if parent:
        threading.Thread(target=_watch_parent, args=(int(parent), stop), daemon=True).start()

    app = open_app(settings)
    broker = make_broker(settings, app.url)
    dramatiq.set_broker(broker)
    actors = declare(broker, app)
    if settings.metrics_port is not None and dispatch:
        metrics.serve(settings.metrics_port)
    worker = dramatiq.Worker(broker, worker_threads=threads, worker_timeout=500)
    worker.start()
    children = [_spawn_child() for _ in range(processes - 1)]
    dispatcher = Dispatcher(app, actors.send) if dispatch else None
    if dispatcher:
        dispatcher.start()
    backfill = IdleBackfill(app)
    backfill.start()
    user_indexes = UserIndexes(app)
    user_indexes.start()
    log.info("memctx worker running: broker=%s threads=%d processes=%d dispatcher=%s", settings.broker, threads,
             processes, bool(dispatcher))
    try:
        stop.wait()
    finally:
        log.info("stopping")
        backfill.stop()
        user_indexes.stop()
        if dispatcher:
            dispatcher.stop()
        for child in children:
            child.terminate()
        worker.stop(timeout=30_000)  # let running jobs finish their step
        broker.close()
        app.close()
        for child in children:
            child.wait(timeout=15)


def _spawn_child() -> subprocess.Popen:
    env = {**os.environ, "MEMCTX_WORKER_PARENT": str(os.getpid())}
    return subprocess.Popen([sys.executable, "-m", "memctx", "worker", "--no-dispatch", "--processes", "1"], env=env)
