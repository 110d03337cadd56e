"""The server under test is the Postgres major version that was asked for, so a run meant for
PostgreSQL 16 cannot pass on a silent fallback to the default server."""

from __future__ import annotations

import psycopg

# The oldest major memctx supports: Supabase's oldest (15).
OLDEST_SUPPORTED = 15


def test_server_is_the_requested_major_version(admin_url, postgres_major):
    with psycopg.connect(admin_url) as conn:
        version_num = int(conn.execute("show server_version_num").fetchone()[0])
        vector = conn.execute("select default_version from pg_available_extensions where name = 'vector'").fetchone()
    if postgres_major is None:
        assert version_num >= OLDEST_SUPPORTED * 10_000
    else:
        assert version_num // 10_000 == postgres_major
    assert vector is not None, "pgvector is not available on this server"
