"""`memctx mcp [--http] [--host H] [--port N]`, added to the `memctx` command line through the
`memctx.commands` entry point (pyproject.toml), so that the core never imports the MCP server."""

from __future__ import annotations

from typing import Optional

import typer

from memctx.config import Settings


def mcp_cmd(http: bool = typer.Option(False, "--http", help="serve streamable HTTP at /mcp instead of stdio"),
            host: Optional[str] = typer.Option(None, help="--http: listen address (MEMCTX_API_HOST, 127.0.0.1)"),
            port: Optional[int] = typer.Option(None, help="--http: listen port (MEMCTX_API_PORT, 8080)")) -> None:
    """Serve the MCP tools, over stdio or streamable HTTP.

    stdio: the user of MEMCTX_API_KEY, the conversation MEMCTX_CONVERSATION.

    HTTP: each request's bearer key or JWT, and its X-Memctx-Conversation header."""
    settings = Settings()
    if http:
        import uvicorn

        uvicorn.run("mcp_tools.http:serve_app", factory=True, host=host or settings.api_host,
                    port=settings.api_port if port is None else port)
        return
    from mcp_tools import stdio
    from memctx.app import open_app
    from memctx.cli.common import BAD_INPUT, fail

    with open_app(settings) as memctx_app:
        try:
            stdio.serve(memctx_app, settings)
        except stdio.StartupError as exc:
            fail(str(exc), BAD_INPUT)


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_cmd)
