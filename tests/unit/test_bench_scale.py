"""bench/scale.py's command line: arguments that leave nothing to time are refused up front, with
a message that says which flag to change, instead of failing after minutes of loading."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCALE = Path(__file__).resolve().parents[2] / "bench" / "scale.py"


@pytest.fixture(scope="module")
def scale():
    spec = importlib.util.spec_from_file_location("bench_scale", SCALE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
