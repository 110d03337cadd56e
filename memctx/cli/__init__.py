"""The `memctx` command line: one Typer app (main.py), one id parser and error path (common.py),
and the commands of each layer (context.py, pipeline.py, doctor.py)."""

from memctx.cli.main import app, main

__all__ = ["app", "main"]
