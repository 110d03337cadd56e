"""`memctx serve` and `memctx keys create|list|revoke`, added to the `memctx` command line through
the `memctx.commands` entry point (pyproject.toml), so that the core never imports the API."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import typer

from memctx.config import Settings

keys_app = typer.Typer(help="API keys of the HTTP API (shown once, stored hashed).", no_args_is_help=True)


def serve_cmd(host: Optional[str] = typer.Option(None, help="listen address (MEMCTX_API_HOST, 127.0.0.1)"),
              port: Optional[int] = typer.Option(None, help="listen port (MEMCTX_API_PORT, 8080)"),
              workers: Optional[int] = typer.Option(None, min=1, help="worker processes (MEMCTX_API_WORKERS)"),
              migrate: bool = typer.Option(True, "--migrate/--no-migrate",
                                           help="apply pending migrations before serving (--no-migrate: a "
                                                "deployment that migrates as its own step)"),
              worker: bool = typer.Option(True, "--worker/--no-worker",
                                          help="run the background worker (summaries, boards, embeddings) in "
                                               "this process (--no-worker: `memctx worker` runs elsewhere)"),
              ssl_certfile: Optional[Path] = typer.Option(
                  None, help="serve HTTPS with this certificate (PEM; MEMCTX_API_SSL_CERTFILE)"),
              ssl_keyfile: Optional[Path] = typer.Option(
                  None, help="the certificate's private key (PEM; MEMCTX_API_SSL_KEYFILE)")
              ) -> None:
    """Serve the HTTP API (routes under /v1; /healthz, /readyz), the proxy, MCP at /mcp and the
    board page at /ui/; by default also migrate first and run the worker in this process. Given a
    certificate and its key, over HTTPS."""
    import threading

    import uvicorn

    from memctx import logs
    from memctx.app import NotReady, prepare_database
    from memctx.cli.common import BAD_INPUT, fail, tls_files
    from memctx.migrate import EmbeddingSpaceMismatch, MigrationError

    settings = Settings()
    tls = tls_files(ssl_certfile or settings.api_ssl_certfile, ssl_keyfile or settings.api_ssl_keyfile)
    logs.configure(settings.log_level)  # JSON lines from the start (the migration, the worker); the app adds its request ids
    if migrate:
        try:
            prepare_database(settings)
        except (NotReady, EmbeddingSpaceMismatch, MigrationError) as exc:
            fail(str(exc), BAD_INPUT)
    stop = threading.Event()
    background = threading.Thread(target=_run_worker, args=(settings, stop), name="memctx-worker",
                                  daemon=True) if worker else None
    if background:
        background.start()
    try:
        uvicorn.run("memctx.api.app:serve_app", factory=True, host=host or settings.api_host,
                    port=settings.api_port if port is None else port, workers=workers or settings.api_workers,
                    timeout_keep_alive=settings.api_keep_alive_s, **tls)
    finally:
        stop.set()
        if background:
            background.join(60)


def _run_worker(settings: Settings, stop) -> None:
    """The background services the installed doors declare (`memctx.services`: the worker, as
    `memctx worker` runs it: dispatcher, actors, idle backfill), in a thread of the server's
    process until `stop` is set. The API never imports the worker: it is plugged in by name."""
    import logging

    from memctx import doors

    settings = in_process_worker_settings(settings)
    for run in doors.plugged(doors.SERVICES):
        try:
            run(settings, stop=stop)
        except Exception:
            logging.getLogger("memctx.worker").exception("the in-process worker stopped")


def in_process_worker_settings(settings: Settings) -> Settings:
    """The settings of the worker that runs in the server's process: its embedder on one thread,
    unless MEMCTX_EMBED_THREADS says otherwise. It embeds a few messages at a time beside the
    requests, on the same cores, and a second onnxruntime thread (spinning between runs) cost each
    chat turn more CPU than it saved (docs/BENCHMARKS.md, "Chat turns per second")."""
    if "embed_threads" in settings.model_fields_set:
        return settings
    return settings.model_copy(update={"embed_threads": 1})


@contextmanager
def _owner_connections() -> Iterator:
    """The owner's connections to a migrated database, for a key command: one at a time, opened
    when asked. Not an App: a key is one statement, and loading the embedder, the summarizer and a
    pool's standing connections took most of the command's seconds."""
    from memctx import db
    from memctx.cli.common import fail
    from memctx.migrate import NotReady, check_migrated

    settings = Settings()
    with db.command_pool(db.database_url(settings), settings) as pool:
        try:
            with pool.connection() as conn:
                check_migrated(conn)
        except NotReady as exc:
            fail(str(exc))
        yield pool


@keys_app.command("create")
def create_cmd(user: str = typer.Option(..., help="the key's user UUID"),
               name: Optional[str] = typer.Option(None, help="a name to recognize the key by")) -> None:
    """Make an API key for a user and print it: it is shown this once."""
    from memctx import keys
    from memctx.cli.common import BAD_INPUT, fail, parse_uuid
    from memctx.models import InvalidInput

    owner = parse_uuid(user, "--user")
    with _owner_connections() as pool:
        try:
            made = keys.create_key(pool, owner, name)
        except InvalidInput as exc:
            fail(str(exc), BAD_INPUT)
    print(json.dumps({**made.key.as_json(), "key": made.secret}))


@keys_app.command("list")
def list_cmd(user: str = typer.Option(..., help="the user UUID")) -> None:
    """A user's keys, one JSON line each (never the key itself)."""
    from memctx import keys
    from memctx.cli.common import parse_uuid

    owner = parse_uuid(user, "--user")
    with _owner_connections() as pool:
        for key in keys.list_keys(pool, owner):
            print(json.dumps(key.as_json()))


@keys_app.command("revoke")
def revoke_cmd(key_id: str = typer.Argument(..., help="the key's id (from `keys list`)")) -> None:
    """Revoke a key: requests with it get 401 from now on."""
    from memctx import keys
    from memctx.cli.common import BAD_INPUT, fail, parse_uuid

    key = parse_uuid(key_id, "key id")
    with _owner_connections() as pool:
        try:
            revoked = keys.revoke_key(pool, key)
        except LookupError as exc:
            fail(str(exc), BAD_INPUT)
    print(json.dumps(revoked.as_json()))


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
    app.add_typer(keys_app, name="keys")
