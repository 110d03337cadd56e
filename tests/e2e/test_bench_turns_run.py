"""bench/turns.py end to end against a real `memctx serve` with its worker: a short timed run (every
call answers, the worker drains the outbox), the check mode at small scale (every message stored
once, in order, and summarized), and the check itself catching a lost and a duplicated message."""

from __future__ import annotations

import importlib.util
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from memctx.models import NewMessage
from memctx.pipeline.catchup import catch_up

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def turns(monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_turns_run", ROOT / "bench" / "turns.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_a_short_run_serves_turns_and_the_worker_keeps_up(turns, admin_url, monkeypatch, capsys):
    monkeypatch.setenv("MEMCTX_DATABASE_URL", admin_url)
    report = turns.main(["--conversations", "2", "--seconds", "2", "--warmup", "1", "--history", "2",
                         "--database", "memctx_test_turns", "--drain-timeout", "30"])
    (run,) = report["runs"]
    assert run["arm"] == "worker" and run["failed"] == {}
    assert run["turns"] > 0 and run["turns_per_s"] > 0
    assert run["turn"]["p50_ms"] > 0 and run["backlog"]["drain_after_load_s"] is not None
    assert run["cpu_ms_per_turn"]["server"] > 0 and run["cpu_ms_per_turn"]["postgres"] > 0
    assert "turns/s" in capsys.readouterr().out


def test_the_check_mode_finds_every_message_stored_once_and_summarized(turns, admin_url, monkeypatch, capsys):
    """8 conversations at once, 4 messages each (one per request) and 2 contexts: 0 errors, 32 of
    32 stored once in order, all summarized; the printout says so and the run's exit status is 0."""
    monkeypatch.setenv("MEMCTX_DATABASE_URL", admin_url)
    report = turns.main(["--conversations", "8", "--check-messages", "4", "--database", "memctx_test_check",
                         "--drain-timeout", "60"])
    (run,) = report["runs"]
    found = run["invariants"]
    assert run["errors"] == {} and (run["appends"], run["contexts"]) == (32, 16)
    assert (found["expected"], found["stored"], found["lost"], found["duplicated"], found["out_of_order"]) == \
        (32, 32, 0, 0, 0)
    assert (found["outbox_pending"], found["unembedded"], found["boards_behind"], found["chains_off"]) == (0, 0, 0, 0)
    assert report["ok"] and run["append"]["p95_ms"] > 0 and run["context"]["p50_ms"] > 0
    assert "no_errors: ok, stored_once: ok, summarized: ok" in capsys.readouterr().out


def test_the_check_counts_a_lost_and_a_duplicated_message(turns, app, database_url):
    """The database check alone: two conversations brought up to date in process pass, but for the
    outbox rows no worker took (so not summarized); then one message stored a second time and one
    deleted, and the check says so (and so the run would exit 1)."""
    names, sent = ["check-a", "check-b"], [[f"{n} says {i}" for i in range(6)] for n in ("Ana", "Ben")]
    ids = []
    for name, texts in zip(names, sent):
        user = uuid.uuid4()
        conv = app.store.create_conversation(user, external_id=name)
        app.store.append_messages(user, conv.id, [NewMessage.build("user", t) for t in texts])
        catch_up(app, user, conv.id)
        ids.append(conv.id)
    clean = turns.check_stored(database_url, names, sent, app.settings)
    assert clean["stored_once"] and clean["stored"] == 12
    assert (clean["unembedded"], clean["boards_behind"], clean["chains_off"]) == (0, 0, 0)
    assert clean["outbox_pending"] == 12 and not clean["summarized"]  # a row per message, and no worker ran
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("insert into memctx.messages (conversation_id, role, content, text) "
                     "values (%s, 'user', '[]', 'Ana says 3')", (ids[0],))
        conn.execute("delete from memctx.messages where conversation_id = %s and text = 'Ben says 2'", (ids[1],))
    found = turns.check_stored(database_url, names, sent, app.settings)
    assert (found["lost"], found["duplicated"], found["stored"]) == (1, 1, 12)
    assert not found["stored_once"]
