"""`memctx worker`: added to the `memctx` command line through the `memctx.commands` entry point
(pyproject.toml), so that the core package never imports the worker."""

from __future__ import annotations

import logging
from typing import Optional

import typer

from memctx.config import Settings


def worker_cmd(dispatch_: bool = typer.Option(True, "--dispatch/--no-dispatch",
                                              help="also run the outbox dispatcher (LISTEN/NOTIFY + sweeps)"),
               processes: Optional[int] = typer.Option(None, help="worker processes (MEMCTX_WORKER_PROCESSES)"),
               threads: Optional[int] = typer.Option(None, help="threads per process (MEMCTX_WORKER_THREADS)")
               ) -> None:
    """Run the background worker: summaries, boards, embeddings, long-term summaries."""
    from worker.main import run  # dramatiq and the broker load only when the worker runs

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for name in ("dramatiq", "httpx", "httpcore"):  # httpx logs every request's URL at info
        logging.getLogger(name).setLevel(logging.WARNING)
    run(Settings(), dispatch=dispatch_, processes=processes, threads=threads)


def register(app: typer.Typer) -> None:
    app.command("worker")(worker_cmd)
