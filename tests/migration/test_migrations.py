"""Migrations build the expected schema once, under a lock, and stay in step with Supabase's copy."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from memctx.app import NotReady, open_app
from memctx.config import Settings
from memctx.embed import HashingEmbedder
from memctx.migrate import MIGRATIONS_DIR, EmbeddingSpaceMismatch, MigrationError, configure_embedding_space, discover, migrate

ROOT = Path(__file__).resolve().parents[2]
TABLES = {"conversations", "messages", "summaries", "summary_boards", "working_memory_chunks",
          "conversation_summaries", "outbox", "embedding_space", "schema_migrations"}


@pytest.fixture
def empty_db(admin_url):
    name = f"memctx_mig_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    yield make_conninfo(admin_url, dbname=name)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}" with (force)')


def _conn(url):
    return psycopg.connect(url, row_factory=dict_row)


def test_fresh_database_gets_the_expected_schema(empty_db):
    with _conn(empty_db) as conn:
        applied = migrate(conn)
        assert [m.version for m in applied] == [m.version for m in discover()]
        configure_embedding_space(conn, "test-model", 384)
        tables = {r["tablename"] for r in conn.execute("select tablename from pg_tables where schemaname = 'memctx'")}
        assert TABLES <= tables
        rls = {r["relname"] for r in conn.execute(
            "select relname from pg_class where relnamespace = 'memctx'::regnamespace and relkind = 'r' and relrowsecurity")}
        assert TABLES - {"schema_migrations"} <= rls
        hnsw = conn.execute("select indexdef from pg_indexes where schemaname = 'memctx' and indexdef like '%hnsw%'").fetchall()
        assert len(hnsw) == 4
        assert all("vector_cosine_ops" in r["indexdef"] and "m='16'" in r["indexdef"] and "ef_construction='64'" in r["indexdef"]
                   for r in hnsw)
        gin = {r["indexname"] for r in conn.execute("select indexname from pg_indexes where schemaname = 'memctx' and indexdef like '%gin%'")}
        assert {"messages_tsv_idx", "summaries_tsv_idx"} <= gin
        dim = conn.execute("select atttypmod from pg_attribute where attrelid = 'memctx.messages'::regclass and attname = 'embedding'").fetchone()
        assert dim["atttypmod"] == 384
        triggers = {r["tgname"] for r in conn.execute("select tgname from pg_trigger where tgrelid = 'memctx.messages'::regclass")}
        assert {"messages_assign_seq", "messages_enqueue"} <= triggers
        assert {"anon", "authenticated", "service_role"} <= {r["rolname"] for r in conn.execute("select rolname from pg_roles")}


def test_rerun_applies_nothing_and_concurrent_runs_apply_once(empty_db):
    results, errors = [], []

    def run():
        try:
            with _conn(empty_db) as conn:
                results.append(len(migrate(conn)))
        except Exception as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(results) == [0, 0, len(discover())]
    with _conn(empty_db) as conn:
        assert migrate(conn) == []
        assert conn.execute("select count(*) as n from memctx.schema_migrations").fetchone()["n"] == len(discover())


def test_a_changed_applied_migration_is_an_error(empty_db, tmp_path):
    for m in discover():
        (tmp_path / m.path.name).write_text(m.sql)
    with _conn(empty_db) as conn:
        migrate(conn, tmp_path)
        first = sorted(tmp_path.glob("*.sql"))[0]
        first.write_text(first.read_text() + "\n-- edited\n")
        with pytest.raises(MigrationError, match="changed after it was applied"):
            migrate(conn, tmp_path)


def test_embedding_space_mismatch_is_a_clear_startup_error(database_url):
    with pytest.raises(EmbeddingSpaceMismatch, match="384-dimensional"):
        open_app(Settings(database_url=database_url), embedder=HashingEmbedder(dim=32))


def test_unmigrated_database_is_a_clear_startup_error(empty_db):
    with pytest.raises(NotReady, match="memctx migrate"):
        open_app(Settings(database_url=empty_db), embedder=HashingEmbedder())


def test_supabase_migrations_are_identical_copies():
    ours = {p.name: p.read_bytes() for p in MIGRATIONS_DIR.glob("*.sql")}
    supabase = {p.name: p.read_bytes() for p in (ROOT / "supabase" / "migrations").glob("*.sql")}
    # Supabase CLI names files <timestamp>_name.sql; ours keep NNNN_name.sql, same names both sides.
    assert supabase == ours
    assert (ROOT / "supabase" / "config.toml").exists()


def test_migrations_avoid_postgres_18_only_features():
    """Supabase runs Postgres 15 and 17: no uuidv7(), virtual generated columns, RETURNING OLD/NEW."""
    for m in discover():
        sql = m.sql.lower()
        for feature in ("uuidv7(", " virtual", "returning old", "returning new"):
            assert feature not in sql, f"{m.path.name} uses the Postgres 18 feature {feature.strip()!r}"


def test_pgvector_is_installed_outside_the_memctx_schema(empty_db):
    from memctx import db
    from memctx.config import Settings

    with db.connect(empty_db, Settings(database_url=empty_db)) as conn:  # the app's search_path: memctx first
        migrate(conn)
        schema = conn.execute("select extnamespace::regnamespace::text as s from pg_extension where extname = 'vector'").fetchone()
        assert schema["s"] == "public"
        assert conn.execute("show search_path").fetchone()["search_path"].startswith("memctx")
