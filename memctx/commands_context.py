"""CLI commands of the context layer, registered on the main `memctx` app by memctx.cli."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this layer's commands to the main app."""
