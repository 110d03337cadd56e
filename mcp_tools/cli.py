"""`memctx mcp [--http] [--host H] [--port N]`, added to the `memctx` command line through the
`memctx.commands` entry point (pyproject.toml), so that the core never imports the MCP server."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from memctx.config import Settings


def mcp_cmd(http: bool = typer.Option(False, "--http", help="serve streamable HTTP at /mcp instead of stdio"),
            host: Optional[str] = typer.Option(None, help="--http: listen address (MEMCTX_API_HOST, 127.0.0.1)"),
            port: Optional[int] = typer.Option(None, help="--http: listen port (MEMCTX_API_PORT, 8080)"),
            ssl_certfile: Optional[Path] = typer.Option(
                None, help="--http: serve HTTPS with this certificate (PEM; MEMCTX_API_SSL_CERTFILE)"),
            ssl_keyfile: Optional[Path] = typer.Option(
                None, help="--http: the certificate's private key (PEM; MEMCTX_API_SSL_KEYFILE)")) -> None:
    """Serve the MCP tools, over stdio or streamable HTTP.

    stdio: the user of MEMCTX_API_KEY, the conversation MEMCTX_CONVERSATION.

    HTTP: each request's bearer key or JWT, and its X-Memctx-Conversation header."""
    settings = Settings()
    if http:
        import uvicorn

        from memctx.cli.common import tls_files

        tls = tls_files(ssl_certfile or settings.api_ssl_certfile, ssl_keyfile or settings.api_ssl_keyfile)
        uvicorn.run("memctx.mcp_tools.http:serve_app", factory=True, host=host or settings.api_host,
                    port=settings.api_port if port is None else port, **tls)
        return
    _serve_stdio(settings)


def _serve_stdio(settings: Settings) -> None:
    """The stdio server, its log lines JSON on stderr (MCP clients show the server's stderr); when
    it cannot start (no usable database, an invalid key) or stops on an error, one error line
    saying why and exit status 2, and an embedded Postgres this process started is stopped again."""
    import logging

    import psycopg
    from psycopg_pool import PoolTimeout

    from memctx.mcp_tools import stdio
    from memctx import db, logs
    from memctx.app import NotReady, open_app
    from memctx.cli.common import BAD_INPUT
    from memctx.migrate import EmbeddingSpaceMismatch, MigrationError

    logs.configure(settings.log_level)  # one JSON object a line on stderr, as `memctx serve` writes; stdout is MCP's
    started_here = not settings.database_url and not db.embedded_status(settings).running
    problem = None
    try:
        with open_app(settings) as memctx_app:
            stdio.serve(memctx_app, settings)
    except (stdio.StartupError, NotReady, EmbeddingSpaceMismatch, MigrationError, psycopg.Error, PoolTimeout) as exc:
        problem = str(exc)
    except BaseExceptionGroup as group:  # the server's task group: say what went wrong, not the group
        problem = "; ".join(str(exc) for exc in _leaves(group))
    if problem is None:
        return
    if started_here:
        db.stop_embedded(settings)
    where = "MEMCTX_DATABASE_URL" if settings.database_url else f"the embedded database in {db.pgdata_dir(settings)}"
    line = (f"memctx mcp: {problem} ({where}; MCP clients pass the server only the variables its `env` "
            "names: set MEMCTX_HOME or MEMCTX_DATABASE_URL, and MEMCTX_API_KEY, there)")
    logging.getLogger("memctx.mcp").error(" ".join(line.split()))
    raise typer.Exit(BAD_INPUT)


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    return [leaf for exc in group.exceptions
            for leaf in (_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])]


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_cmd)
