"""Where the doors plug in: what worker/, api/ and mcp_tools/ add to the core's command line and to
the HTTP server.

Owns: loading the `memctx.commands` entry points (functions that add commands to the `memctx`
Typer app), the `memctx.routers` entry points (functions `(App, Settings) -> APIRouter` that
`memctx serve` includes, such as the MCP tools at /mcp) and the `memctx.services` entry points
(functions `(Settings, *, stop: threading.Event) -> None` that `memctx serve` runs in threads of
its process until `stop` is set, such as the background worker), declared in pyproject.toml.
Through it the core never imports a door, and no door imports another.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any, Callable

COMMANDS = "memctx.commands"
ROUTERS = "memctx.routers"
SERVICES = "memctx.services"


def plugged(group: str) -> list[Callable[..., Any]]:
    """The functions the installed doors declare under `group`, in name order."""
    return [entry.load() for entry in sorted(entry_points(group=group), key=lambda e: e.name)]
