"""`memctx eval board` end to end, as a user runs it: no database, no LLM, the synthetic fixture."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FIXTURE = Path(__file__).parents[1] / "fixtures" / "locomo-mini.json"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memctx", "eval", "board", *args], capture_output=True, text=True,
                          timeout=300)


def test_eval_board_reports_every_figure():
    done = _run(str(FIXTURE), "--json")
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout)
    assert r["conversations"] == 2
    assert set(r["precision"]) == {"key_facts", "action_items", "constraints"}
    assert all(0 <= share <= 1 for share in r["precision"].values())
    assert r["items"]["key_facts"] > 0 and r["fact_coverage"]["observations"] == 150
    assert 0 < r["fact_coverage"]["covered"] <= r["fact_coverage"]["observations"]
    assert all(v["most"] <= v["cap"] for v in r["section_sizes"].values()), r["section_sizes"]
    assert r["summaries"]["sessions"] > 0 and 0 < r["summaries"]["rouge_l"] < 1
    # The labelled dev utterances ship with the package.
    assert set(r["labelled"]) == {"tuning", "holdout"}
    assert r["labelled"]["tuning"]["utterances"] >= 300 and r["labelled"]["holdout"]["utterances"] >= 100
    assert set(r["labelled"]["tuning"]["detectors"]) == {"constraints", "corrections", "action_items", "questions"}


def test_eval_board_table_and_a_missing_file():
    done = _run(str(FIXTURE))
    assert done.returncode == 0, done.stderr
    assert "key_facts" in done.stdout and "ROUGE-L" in done.stdout and "holdout detector action_items" in done.stdout
    missing = _run(str(FIXTURE.with_name("nope.json")))
    assert missing.returncode == 2 and "nope.json" in missing.stderr and "Traceback" not in missing.stderr
