"""A short bench/turns.py run end to end: a real `memctx serve` with its worker, two conversations,
two seconds of turns after a warm-up; every call answers and the worker has drained the outbox at the end."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_short_run_serves_turns_and_the_worker_keeps_up(admin_url, monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("bench_turns_run", ROOT / "bench" / "turns.py")
    turns = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, turns)
    spec.loader.exec_module(turns)
    monkeypatch.setenv("MEMCTX_DATABASE_URL", admin_url)
    report = turns.main(["--conversations", "2", "--seconds", "2", "--warmup", "1", "--history", "2",
                         "--database", "memctx_test_turns", "--drain-timeout", "30"])
    (run,) = report["runs"]
    assert run["arm"] == "worker" and run["failed"] == {}
    assert run["turns"] > 0 and run["turns_per_s"] > 0
    assert run["turn"]["p50_ms"] > 0 and run["backlog"]["drain_after_load_s"] is not None
    assert "turns/s" in capsys.readouterr().out
