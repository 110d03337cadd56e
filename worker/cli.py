"""`memctx worker`: added to the `memctx` command line through the `memctx.commands` entry point
(pyproject.toml), so that the core package never imports the worker."""

from __future__ import annotations

from typing import Optional

import typer

from memctx import logs
from memctx.config import Settings


def worker_cmd(dispatch_: bool = typer.Option(True, "--dispatch/--no-dispatch",
                                              help="also run the outbox dispatcher (LISTEN/NOTIFY + sweeps)"),
               processes: Optional[int] = typer.Option(None, help="worker processes (MEMCTX_WORKER_PROCESSES)"),
               threads: Optional[int] = typer.Option(None, help="threads per process (MEMCTX_WORKER_THREADS)")
               ) -> None:
    """Run the background worker: summaries, boards, embeddings, long-term summaries."""
    from memctx.worker.main import run  # dramatiq and the broker load only when the worker runs

    settings = Settings()
    logs.configure(settings.log_level)  # one JSON object a line, as `memctx serve` writes; no request URLs
    run(settings, dispatch=dispatch_, processes=processes, threads=threads)


def register(app: typer.Typer) -> None:
    app.command("worker")(worker_cmd)
