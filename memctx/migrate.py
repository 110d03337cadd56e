"""Schema migrations: numbered plain SQL files applied in order, once each.

Owns: applying `migrations/NNNN_name.sql` (each in its own transaction, under an advisory lock
so two processes never migrate at once), recording them in `memctx.schema_migrations` with a
checksum (an applied file that later changed is an error, but for the earlier texts listed in
EARLIER_CHECKSUMS), and fixing the embedding space for the configured embedder. The migration
files are the only source of schema truth.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.rows import tuple_row


def _migrations_dir() -> Path:
    """The top-level migrations/ folder, which ships inside the wheel as memctx/migrations (in a
    checkout, memctx/migrations is a link to it)."""
    return (Path(__file__).resolve().parent / "migrations").resolve()


MIGRATIONS_DIR = _migrations_dir()
_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
# pg_advisory_lock key: the first 8 bytes of sha1("memctx.migrate") as a signed bigint.
LOCK_KEY = int.from_bytes(hashlib.sha1(b"memctx.migrate").digest()[:8], "big", signed=True)

_BOOKKEEPING = """
create schema if not exists memctx;
create table if not exists memctx.schema_migrations (
  version integer primary key,
  name text not null,
  checksum text not null,
  applied_at timestamptz not null default now()
);
"""


# Checksums of earlier texts of applied migrations whose comments alone were reworded since: a
# database that recorded one of them is up to date, and its record is moved to today's text.
# Nothing else may change in an applied migration.
EARLIER_CHECKSUMS: dict[int, frozenset[str]] = {
    11: frozenset({"2ce59252cdf7e30222ff78a002bbb08031c5468bb771206ecd60b91b6eaeb44a"}),
    14: frozenset({"b579d3c1242e0871ba0a4d97c9a9b10f312a51341c05072b78b24db7817eb038"}),
    16: frozenset({"22ad769ef66ac6a9f9e962e4ddf6277d13dc270e382aa6b4c712b544c533bbd5"}),
    17: frozenset({"33626d9242984c8a210958e037a7f3b3c1820425e2875ec8f31614eccf3356da"}),
}


class MigrationError(RuntimeError):
    pass


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


def discover(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    found = []
    for path in sorted(directory.glob("*.sql")):
        match = _FILE.match(path.name)
        if not match:
            raise MigrationError(f"{path.name}: migration files are named NNNN_name.sql")
        found.append(Migration(int(match.group(1)), match.group(2), path))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"duplicate migration numbers in {directory}")
    return found


def migrate(conn: psycopg.Connection, directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """Apply the pending migrations; returns those applied (none on a re-run)."""
    migrations = discover(directory)
    conn.autocommit = True
    # Migrations run with the server's usual search_path, as the Supabase CLI runs them: every
    # memctx object is schema-qualified, and `create extension vector` must land in public (or
    # Supabase's `extensions`), not in schema memctx that the application's connections put first.
    with conn.cursor(row_factory=tuple_row) as cur:
        previous_path = cur.execute("select current_setting('search_path')").fetchone()[0]
    conn.execute("select set_config('search_path', '\"$user\", public, extensions', false)")
    try:
        conn.execute("select pg_advisory_lock(%s)", (LOCK_KEY,))
        try:
            with conn.transaction():
                conn.execute(_BOOKKEEPING)
            with conn.cursor(row_factory=tuple_row) as cur:
                applied = dict(cur.execute("select version, checksum from memctx.schema_migrations").fetchall())
            done = []
            for m in migrations:
                if m.version in applied:
                    if applied[m.version] in EARLIER_CHECKSUMS.get(m.version, ()):
                        with conn.transaction():
                            conn.execute("update memctx.schema_migrations set checksum = %s where version = %s",
                                         (m.checksum, m.version))
                    elif applied[m.version] != m.checksum:
                        raise MigrationError(f"migration {m.path.name} changed after it was applied")
                    continue
                with conn.transaction():
                    # A migration may pass over a whole table (a backfill, an index build): the
                    # application's per-statement timeout is for requests, not for it.
                    conn.execute("set local statement_timeout = 0")
                    conn.execute(m.sql, prepare=False)
                    conn.execute("insert into memctx.schema_migrations (version, name, checksum) values (%s, %s, %s)",
                                 (m.version, m.name, m.checksum))
                done.append(m)
            return done
        finally:
            conn.execute("select pg_advisory_unlock(%s)", (LOCK_KEY,))
    finally:
        conn.execute("select set_config('search_path', %s, false)", (previous_path,))
        conn.autocommit = False


def configure_embedding_space(conn: psycopg.Connection, model: str, dim: int) -> None:
    """Fix the vector dimension on first use; a mismatch raises EmbeddingSpaceMismatch."""
    try:
        with conn.transaction():
            conn.execute("select memctx.configure_embedding_space(%s, %s)", (model, dim))
    except psycopg.errors.InvalidParameterValue as exc:
        raise EmbeddingSpaceMismatch(exc.diag.message_primary or str(exc)) from None
    except psycopg.errors.UndefinedFunction:
        raise MigrationError("the database is not migrated: run `memctx migrate`") from None


class EmbeddingSpaceMismatch(RuntimeError):
    """The database holds embeddings of another model or dimension than the configured one."""


class NotReady(RuntimeError):
    """The database is not migrated, or was built for another embedder."""


def check_migrated(conn: psycopg.Connection) -> None:
    """NotReady unless every migration of this memctx is applied (nothing else is read)."""
    latest = max(m.version for m in discover())
    try:
        row = conn.execute("select max(version) from memctx.schema_migrations").fetchone()
    except psycopg.errors.UndefinedTable as exc:  # never migrated
        conn.rollback()
        raise NotReady("the database is not migrated: run `memctx migrate`") from exc
    version = row[0] if isinstance(row, tuple) else next(iter(row.values()))
    if version is None or version < latest:
        raise NotReady(f"the database is at migration {version}, this memctx needs {latest}: run `memctx migrate`")
