"""A throwaway database on the embedded Postgres (or MEMCTX_DATABASE_URL's server) for one benchmark.

Owns: creating it, migrating it, and dropping it afterwards whatever happens. Benchmarks that
ingest data use it so that they never touch the database of a running memctx.
"""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from typing import Iterator

import psycopg
from psycopg.conninfo import make_conninfo

from memctx import db
from memctx.app import prepare_database
from memctx.config import Settings


@contextmanager
def scratch_database(prefix: str, **settings_update) -> Iterator[Settings]:
    """Settings naming a new, migrated database `memctx_bench_<prefix>_…`, dropped on exit."""
    base = Settings()
    admin = db.database_url(base)
    name = f"memctx_bench_{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    url = make_conninfo(admin, dbname=name)
    try:
        settings = base.model_copy(update={"database_url": url, **settings_update})
        prepare_database(settings, url)
        yield settings
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'drop database if exists "{name}" with (force)')
