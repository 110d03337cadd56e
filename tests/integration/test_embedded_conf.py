"""The embedded server's shared_buffers (MEMCTX_EMBEDDED_SHARED_BUFFERS): a new data directory
starts with it, a stopped one takes a new value at its next start, a running one keeps its value
until it is stopped, and an operator's ALTER SYSTEM wins."""

from __future__ import annotations

import psycopg
import pytest
from pydantic import ValidationError

from memctx import db
from memctx.config import Settings


def _shared_buffers(server) -> str:
    with psycopg.connect(server.get_uri()) as conn:
        return conn.execute("show shared_buffers").fetchone()[0]


def _includes(pgdata) -> int:
    """How many times postgresql.conf includes memctx's file."""
    return (pgdata / "postgresql.conf").read_text().splitlines().count(f"include_if_exists = '{db.SERVER_CONF}'")


def test_a_new_data_directory_starts_with_the_setting(tmp_path):
    pgdata = tmp_path / "pgdata"
    server = db.start_embedded(pgdata, "160MB")
    try:
        assert _shared_buffers(server) == "160MB"
        conf = pgdata / db.SERVER_CONF
        assert conf.stat().st_uid == pgdata.stat().st_uid  # the server's user reads it when we are root
        assert "shared_buffers = '160MB'" in conf.read_text() and _includes(pgdata) == 1
    finally:
        db.stop_pgdata(pgdata)


def test_a_running_server_keeps_its_value_until_it_is_stopped(tmp_path):
    pgdata = tmp_path / "pgdata"
    db.start_embedded(pgdata, "160MB")
    try:
        server = db.start_embedded(pgdata, "192MB")  # reuses the running server
        assert _shared_buffers(server) == "160MB"
        assert "'192MB'" in (pgdata / db.SERVER_CONF).read_text()
    finally:
        db.stop_pgdata(pgdata)
    server = db.start_embedded(pgdata, "192MB")
    try:
        assert _shared_buffers(server) == "192MB" and _includes(pgdata) == 1
    finally:
        db.stop_pgdata(pgdata)


def test_alter_system_wins_over_memctx(tmp_path):
    pgdata = tmp_path / "pgdata"
    server = db.start_embedded(pgdata, "160MB")
    try:
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            conn.execute("alter system set shared_buffers = '144MB'")
    finally:
        db.stop_pgdata(pgdata)
    server = db.start_embedded(pgdata, "192MB")
    try:
        assert _shared_buffers(server) == "144MB"
    finally:
        db.stop_pgdata(pgdata)


def test_auto_is_a_quarter_of_the_memory_within_a_container_s_limit(tmp_path, monkeypatch):
    v2, v1 = tmp_path / "memory.max", tmp_path / "memory.limit_in_bytes"
    monkeypatch.setattr(db, "CGROUP_MEMORY_LIMITS", (v2, v1))
    physical = db.shared_buffers_auto()  # neither file exists: the machine's memory
    assert physical >= db.SHARED_BUFFERS_MIN and physical % 2**20 == 0
    v2.write_text("max\n")
    assert db.shared_buffers_auto() == physical
    v2.write_text(f"{2 * 2**30}\n")  # a 2 GiB container
    assert db.shared_buffers_auto() == min(physical, 512 * 2**20)
    v2.unlink()
    v1.write_text(f"{256 * 2**20}\n")  # cgroup v1, 256 MiB: never below initdb's 128 MB
    assert db.shared_buffers_auto() == db.SHARED_BUFFERS_MIN
    assert db.server_conf("auto") == db.server_conf(f"{db.SHARED_BUFFERS_MIN // 2**20}MB")


@pytest.mark.parametrize("value", ["1gb", "0MB", "2 GB", "lots", ""])
def test_a_size_postgres_would_refuse_is_refused_before_any_server_starts(value):
    with pytest.raises(ValidationError, match="embedded_shared_buffers"):
        Settings(embedded_shared_buffers=value)
