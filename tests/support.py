"""Helpers several test modules share (tests/ is on pytest's pythonpath: `from support import …`)."""

from __future__ import annotations

import json

import psycopg
from psycopg import sql
from psycopg.rows import dict_row


def as_user(database_url: str, user) -> psycopg.Connection:
    """A connection acting as Supabase's `authenticated` role with `user` in its JWT claims, as
    the Supabase client does: RLS decides what it sees."""
    conn = psycopg.connect(database_url, row_factory=dict_row, options="-c search_path=memctx,public")
    conn.execute("select set_config('request.jwt.claims', %s, false)", (json.dumps({"sub": str(user), "role": "authenticated"}),))
    conn.execute("set role authenticated")
    conn.commit()  # session settings survive the rollbacks the tests do
    return conn


def row_counts(conn) -> dict[str, int]:
    """Rows in every table of the memctx schema."""
    tables = [r["relname"] for r in conn.execute(
        "select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace "
        "where n.nspname = 'memctx' and c.relkind in ('r', 'p') order by 1")]
    return {t: conn.execute(sql.SQL("select count(*) as n from memctx.{}").format(sql.Identifier(t))).fetchone()["n"]
            for t in tables}
