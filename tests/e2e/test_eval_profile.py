"""`memctx eval profile` end to end, as a user runs it: no database, no LLM, the synthetic fixture."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo-mini.json"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memctx", "eval", "profile", *args], capture_output=True, text=True,
                          timeout=300)


def test_eval_profile_reports_precision_and_coverage_by_half():
    done = _run(str(FIXTURE), "--json")
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout)
    assert r["learner"] == "extractive" and r["observations"] == 150 and len(r["per_conversation"]) == 2
    assert r["items"] > 0 and 0 < r["precise"] <= r["items"] and 0 < r["precision"] <= 1
    assert 0 < r["covered"] <= r["observations"] and r["covered_per_100_tokens"] > 0
    halves = r["halves"]
    assert halves["odd"]["items"] + halves["even"]["items"] == r["items"]
    assert halves["odd"]["observations"] + halves["even"]["observations"] == r["observations"]
    table = _run(str(FIXTURE))
    assert table.returncode == 0 and "precision" in table.stdout and "odd" in table.stdout
