"""The installable wheel: built from the tree, installed (not editable) into a fresh venv outside
the repo, and run from another directory, as a user of `pip install memctx` would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOORS = ("api", "worker", "mcp_tools")


def _run(args: list[str], cwd: Path, env: dict | None = None, timeout: int = 900) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, args))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_listed_packages_are_the_packages_in_the_tree():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    # The doors' folders are linked into memctx/ (memctx/api -> ../api), so they install as memctx.api,
    # memctx.worker and memctx.mcp_tools, never as top-level packages of those common names.
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "memctx").rglob("__init__.py")}
    found |= {"memctx." + ".".join(p.parent.relative_to(ROOT).parts)
              for top in DOORS for p in (ROOT / top).rglob("__init__.py")}
    assert all((ROOT / "memctx" / top).resolve() == ROOT / top for top in DOORS)
    data_only = {"memctx.migrations", "memctx.data", "memctx.evaluate.data", "memctx.api.ui.static"}
    assert listed == found | data_only


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(ROOT)], cwd=out)
    (built,) = out.glob("memctx-*.whl")
    return built


def test_the_wheel_carries_what_is_read_at_run_time(wheel):
    archive = zipfile.ZipFile(wheel)
    names = set(archive.namelist())
    packaged = {n.removeprefix("memctx/migrations/"): archive.read(n) for n in names
                if n.startswith("memctx/migrations/")}
    supabase = {p.name: p.read_bytes() for p in (ROOT / "supabase" / "migrations").glob("*.sql")}
    assert packaged == supabase  # the Supabase CLI applies exactly what `memctx migrate` applies
    assert {f"memctx/sql/{p.name}" for p in (ROOT / "memctx" / "sql").glob("*.sql")} <= names
    assert "memctx/data/demo.jsonl" in names
    assert {"memctx/api/ui/static/ui.css", "memctx/api/ui/static/ui.js", "memctx/evaluate/data/board_labels.jsonl"} <= names
    assert not any(n.startswith(("tests/", "migrations/", "api/", "worker/", "mcp_tools/")) for n in names)
    license = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
    assert archive.read(license) == (ROOT / "LICENSE").read_bytes()  # the Apache-2.0 text pyproject names


@pytest.mark.slow
def test_installed_wheel_migrates_and_runs_the_demo_outside_the_repo(wheel, tmp_path, admin_url):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    # At the versions the suite runs on (constraints.txt), as the test command installs them.
    _run([str(python), "-m", "pip", "install", "--quiet", "-c", str(ROOT / "constraints.txt"), str(wheel)], cwd=tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # The fresh venv knows nothing of the repo: memctx must come from site-packages.
    where = _run([str(python), "-c", "import memctx.migrate as m; print(m.__file__); print(m.MIGRATIONS_DIR)"],
                 cwd=elsewhere).split()
    assert all(str(env_dir) in line for line in where), where
    # A chat app has its own `api` and `worker` packages, first on sys.path (`python -m` puts the
    # working directory there): memctx and its doors import beside them, and theirs stay theirs.
    app_dir = tmp_path / "chat_app"
    for name in ("api", "worker"):
        (app_dir / name).mkdir(parents=True)
        (app_dir / name / "__init__.py").write_text("OWNER = 'the chat app'\n")
    both = ("import api, worker, memctx.api.app, memctx.worker.main, memctx.mcp_tools.http, memctx.client; "
            "assert api.OWNER == worker.OWNER == 'the chat app'; print(memctx.api.app.__file__)")
    assert str(env_dir) in _run([str(python), "-c", both], cwd=app_dir)
    commands = _run([str(python), "-m", "memctx", "--help"], cwd=app_dir)
    assert all(command in commands for command in ("serve", "worker", "mcp")), commands
    import psycopg

    database = f"memctx_wheel_{os.getpid()}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'create database "{database}"')
    try:
        env = {**os.environ, "MEMCTX_DATABASE_URL": psycopg.conninfo.make_conninfo(admin_url, dbname=database),
               "MEMCTX_HOME": str(tmp_path / "home")}
        memctx = str(env_dir / "bin" / "memctx")
        assert "0001_init.sql" in _run([memctx, "migrate"], cwd=elsewhere, env=env)
        first = _run([memctx, "demo"], cwd=elsewhere, env=env)
        assert "working context:" in first and "where every line came from" in first
        stored = [json.loads(line) for line in first.splitlines() if line.startswith("{")]
        assert len(stored) == 2 and all(s["messages"] > 0 for s in stored)
        again = [json.loads(line) for line in _run([memctx, "demo"], cwd=elsewhere, env=env).splitlines()
                 if line.startswith("{")]
        assert [s["messages"] for s in again] == [0, 0]
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'drop database if exists "{database}" with (force)')
