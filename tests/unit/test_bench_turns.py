"""bench/turns.py's command line and scripts: bad arguments are refused up front with the flag to
change, and each conversation appends turns that follow its seeded history without repeating it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "locomo-mini.json"


@pytest.fixture(scope="module")
def turns():
    spec = importlib.util.spec_from_file_location("bench_turns", ROOT / "bench" / "turns.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


@pytest.mark.parametrize("argv, flag", [
    (["--conversations", "0"], "--conversations must be between 1 and 512, not 0"),
    (["--conversations", "10000"], "--conversations must be between 1 and 512, not 10000"),
    (["--seconds", "0"], "--seconds must be more than 0 and at most 300, not 0"),
    (["--seconds", "3600"], "--seconds must be more than 0 and at most 300, not 3600"),
    (["--arms", "request,gpu"], "--arms takes distinct names of request, worker, request:process, worker:process; got 'request,gpu'"),
    (["--arms", "worker,worker"], "--arms takes distinct names"),
    (["--rounds", "3"], "--rounds is 1 or 2"),
    (["--rate", "0"], "--rate must be more than 0 turns per second, not 0"),
    (["--rate", "2,0"], "--rate must be more than 0 turns per second, not 0"),
    (["--rate", "2,fast"], "--rate takes turns per second, comma-separated, not '2,fast'"),
    (["--check-messages", "-1"], "--check-messages and --check-contexts cannot be negative"),
])
def test_bad_arguments_are_refused_before_any_work(turns, capsys, argv, flag):
    with pytest.raises(SystemExit) as exit_:
        turns.parse_args(argv)
    assert exit_.value.code == 2
    assert flag in capsys.readouterr().err


def test_defaults_and_the_abba_order(turns):
    args = turns.parse_args([])
    assert (args.conversations, args.seconds, args.order) == (64, 20.0, ["worker"])
    assert turns.parse_args(["--rate", "2,4.5"]).rate == [2.0, 4.5] and turns.parse_args([]).rate is None
    assert turns.parse_args(["--arms", "request,worker", "--rounds", "2"]).order == \
        ["request", "worker", "worker", "request"]


def test_the_check_mode_starts_conversations_empty_unless_told(turns):
    assert (turns.parse_args(["--check-messages", "20"]).history, turns.parse_args([]).history) == (0, 40)
    assert turns.parse_args(["--check-messages", "20", "--history", "3"]).history == 3
    with pytest.raises(SystemExit, match="cannot append 10000"):
        turns.check_messages(turns.scripts(FIXTURE, 1, 0)[0], 10000)


def test_each_conversation_continues_its_history_with_new_turns(turns):
    plays = turns.scripts(FIXTURE, 5, 10)
    assert len(plays) == 5
    for play in plays:
        assert len(play.history) == 20 and play.turns and all(len(t) == 2 for t in play.turns)
        seeded = {m.external_id for m in play.history}
        assert not seeded & {m.external_id for t in play.turns for m in t}
        assert play.questions
    # conversations 0 and 2 replay the same LoCoMo conversation from different points
    assert plays[0].history[0].text != plays[2].history[0].text
