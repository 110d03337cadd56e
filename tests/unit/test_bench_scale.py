"""The scale benches' command lines: bench/scale.py's arguments that leave nothing to time are
refused up front, with a message that says which flag to change, instead of failing after minutes
of loading; bench/scale_ab.py's `--calls` times only the calls named and refuses a misspelt one."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def scale():
    return _load("scale")


@pytest.fixture(scope="module")
def scale_ab():
    return _load("scale_ab")


@pytest.mark.parametrize("messages", ["100000", "50000"])
def test_realistic_without_ordinary_users_is_refused(scale, capsys, messages):
    with pytest.raises(SystemExit) as exit_:
        scale.parse_args(["--shape", "realistic", "--messages", messages, "--heavy-messages", "100000"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"--messages {messages} leaves no messages for ordinary users" in err
    assert f"--heavy-messages {int(messages) // 2}" in err


def test_realistic_with_room_for_ordinary_users_is_accepted(scale):
    args = scale.parse_args(["--shape", "realistic", "--messages", "100001", "--heavy-messages", "100000"])
    assert (args.messages, args.heavy_messages) == (100_001, 100_000)


def test_uniform_ignores_the_heavy_user(scale):
    assert scale.parse_args(["--messages", "1000"]).messages == 1000


def test_no_queries_is_refused(scale, capsys):
    with pytest.raises(SystemExit):
        scale.parse_args(["--queries", "0"])
    assert "--queries must be at least 1" in capsys.readouterr().err


def test_every_call_is_timed_by_default(scale_ab):
    assert scale_ab.parse_args([]).calls == ["heavy_user", "heavy_conversation", "ordinary_user",
                                             "ordinary_conversation"]


def test_calls_names_the_calls_timed(scale_ab):
    args = scale_ab.parse_args(["--calls", "heavy_user,ordinary_user", "--set", "k_match=1000"])
    assert (args.calls, args.set) == (["heavy_user", "ordinary_user"], [("k_match", 1000)])


def test_an_unknown_call_is_refused(scale_ab, capsys):
    with pytest.raises(SystemExit) as exit_:
        scale_ab.parse_args(["--calls", "heavy_user,heavy_users"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "unknown calls: heavy_users" in err and "ordinary_conversation" in err
