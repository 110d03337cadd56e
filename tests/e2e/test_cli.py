"""The command line as a user runs it: embedded database lifecycle, demo, ingest errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
from psycopg.rows import dict_row

from support import row_counts

ROOT = Path(__file__).resolve().parents[2]


def memctx(*args, env=None, check=True):
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "memctx", *args], capture_output=True, text=True,
                          env=full_env, cwd=ROOT, timeout=180)
    if check and proc.returncode != 0:
        raise AssertionError(f"memctx {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_embedded_database_lifecycle(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMCTX_DATABASE_URL", raising=False)
    env = {"MEMCTX_HOME": str(tmp_path / "home")}
    assert "stopped" in memctx("db", "status", env=env).stdout
    url = memctx("db", "url", env=env).stdout.strip()
    assert url.startswith("postgresql://") and str(tmp_path) in url
    assert "running" in memctx("db", "status", env=env).stdout
    assert memctx("db", "url", env=env).stdout.strip() == url  # reused, not restarted
    assert memctx("db", "stop", env=env).stdout.strip() == "stopped"
    assert "stopped" in memctx("db", "status", env=env).stdout


def test_demo_ingests_the_shipped_conversation_once(database_url):
    env = {"MEMCTX_DATABASE_URL": database_url}
    first = memctx("demo", env=env)
    lines = [json.loads(line) for line in first.stdout.splitlines() if line.startswith("{")]
    assert {(r["external_id"], r["messages"]) for r in lines} == {("lisbon-trip", 20), ("bakery-stock", 7)}
    assert "Planning a week in Lisbon" in first.stdout and "embedded" in first.stdout
    assert "summary L1" in first.stdout  # the worker's catch-up ran
    assert "working context" in first.stdout and "lt-18" in first.stdout  # the birthday turn is in context
    # The boards cover the whole demo, with its facts and action items.
    assert "summary board (messages 1–7)" in first.stdout and "summary board (messages 1–20)" in first.stdout
    assert "action items: user: Order more butter from Laticínios Serra on Wednesday" in first.stdout
    assert "key facts: Priya: I'm planning a week in Lisbon with my partner Tomás" in first.stdout
    # At the demo's 450 tokens the ~560-token history does not fit: memctx chooses, and says why.
    assert {("current", "message"), ("memories", "message")} <= _origins(first.stdout)
    assert "search hit for the question" in first.stdout and "lower-ranked memories" in first.stdout
    assert "/450 tokens" in first.stdout
    # The 20 turns fit 80 % of 1,000 tokens: the context is the history as it is, a tool's result as one.
    again = memctx("demo", "--budget", "1000", env=env)
    assert all(json.loads(line)["messages"] == 0 for line in again.stdout.splitlines() if line.startswith("{"))
    assert _rows(again.stdout, "current") == [f"lt-{i}" for i in range(1, 21)]
    assert "user: [tool result: reminder saved for 2026-03-06]" in again.stdout


def _origins(stdout: str) -> set[tuple[str, ...]]:
    """(section, kind) of each row of the demo's "where every line came from" table."""
    table = stdout[stdout.index("where every line came from"):]
    return {tuple(cell.strip() for cell in line.split("│")[1:3]) for line in table.splitlines()
            if line.startswith("│") and line.split("│")[1].strip()} - {("section", "kind")}


def test_bad_file_exits_2_names_the_record_and_stores_nothing(database_url, tmp_path):
    env = {"MEMCTX_DATABASE_URL": database_url}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"conversation": "a", "role": "user", "content": "ok"}\n{"conversation": "a", "role": "user", "content": "x\\u0000"}\n')
    proc = memctx("ingest", str(bad), "--format", "jsonl", env=env, check=False)
    assert proc.returncode == 2 and "bad.jsonl line 2" in proc.stderr and "NUL" in proc.stderr
    good = tmp_path / "good.jsonl"
    good.write_text('{"conversation": "a", "role": "user", "content": "ok"}\n')
    out = json.loads(memctx("ingest", str(good), "--format", "jsonl", env=env).stdout)
    assert out["messages"] == 1  # nothing of the bad file was stored before


def test_unmigrated_database_says_what_to_do(admin_url):
    import uuid

    import psycopg
    from psycopg.conninfo import make_conninfo

    name = f"memctx_bare_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    try:
        env = {"MEMCTX_DATABASE_URL": make_conninfo(admin_url, dbname=name)}
        proc = memctx("ingest", str(ROOT / "memctx" / "data" / "demo.jsonl"), env=env, check=False)
        assert proc.returncode == 1 and "memctx migrate" in proc.stderr
        keys = memctx("keys", "create", "--user", str(uuid.uuid4()), env=env, check=False)
        assert keys.returncode == 1 and "memctx migrate" in keys.stderr and "Traceback" not in keys.stderr
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'drop database "{name}" with (force)')




def test_keys_create_loads_neither_the_embedder_nor_the_llm_client(database_url):
    """A key is one statement: the command imports none of the libraries of embedding, the LLM
    client or the web (it took 4-7 s when it opened a whole App for it)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "memctx", "keys", "create", "--user",
                           "8d3e3d6e-2c43-4a8e-9b1e-6f0a3c5d7e21", "--name", "laptop"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "MEMCTX_DATABASE_URL": database_url})
    assert proc.returncode == 0, proc.stderr[-2000:]
    made = json.loads(proc.stdout)
    assert made["key"].startswith("mck_") and made["name"] == "laptop"
    imported = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "psycopg" in imported  # the measure works
    heavy = {"numpy", "onnxruntime", "openai", "tiktoken", "httpx", "selectolax", "memctx.app", "memctx.store"}
    assert not heavy & imported, heavy & imported


def test_a_duplicate_id_in_the_last_conversation_stores_nothing_at_all(database_url, tmp_path):
    env = {"MEMCTX_DATABASE_URL": database_url}
    lines = [{"conversation": "a", "role": "user", "content": "Book a table for four.", "id": "a1"},
             {"conversation": "b", "role": "user", "content": "Order more flour.", "id": "b1"},
             {"conversation": "c", "role": "user", "content": "Hello", "id": "c1"},
             {"conversation": "c", "role": "assistant", "content": "Hi!", "id": "c1"}]
    bad = tmp_path / "dup.jsonl"
    bad.write_text("\n".join(json.dumps(o) for o in lines) + "\n")
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        before = row_counts(conn)
    proc = memctx("ingest", str(bad), "--format", "jsonl", env=env, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: nothing was stored: dup.jsonl line 4: id 'c1' appears twice in conversation 'c' "
        "(first at dup.jsonl line 3)"]
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        assert row_counts(conn) == before  # no conversation, message or outbox row of a or b

    good = tmp_path / "good.jsonl"
    good.write_text("\n".join(json.dumps(o) for o in lines[:3]) + "\n")
    assert [json.loads(line)["messages"] for line in memctx("ingest", str(good), env=env).stdout.splitlines()] == [1, 1, 1]
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        stored = row_counts(conn)
    again = memctx("ingest", str(good), env=env).stdout.splitlines()
    assert [json.loads(line)["skipped"] for line in again] == [1, 1, 1]
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        assert row_counts(conn) == stored


def _rows(stdout: str, section: str) -> list[str]:
    """The external ids of the demo table's rows of one section, in order."""
    table = stdout[stdout.index("where every line came from"):]
    return [line.split("│")[3].strip() for line in table.splitlines()
            if line.startswith("│") and line.split("│")[1].strip() == section]

