"""The scale benches' command lines: bench/scale.py's arguments that leave nothing to time are
refused up front, with a message that says which flag to change, instead of failing after minutes
of loading; bench/scale_ab.py's `--calls` times only the calls named and refuses a misspelt one.
And bench/realistic.py's rows, the same whatever the order they are loaded in (`--order`): as
they would have arrived, among random others, or a conversation at a time."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a module's dataclasses look it up there
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


@pytest.fixture(scope="module")
def realistic():
    return _load("realistic")


def _rows(realistic, *orders):
    conversations = realistic.shape(3_000, 40, 3, heavy_messages=1_000, long_conversation=300)
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(50, 8)).astype(np.float32)
    pool = [f"text {i}" for i in range(50)]
    now = max(c.start for c in conversations) + realistic.timedelta(days=1)
    return conversations, [realistic.message_rows(conversations, pool, vectors, np.full(50, 3), order, now=now)
                           for order in orders]


def _key(row):  # conversation, seq, external id, created_at, text
    return row[0], row[2], row[6], row[9], row[5]


def _runs(rows):  # stretches of one conversation's rows
    return 1 + sum(a[0] != b[0] for a, b in zip(rows, rows[1:]))


def test_realistic_rows_arrive_in_time_order_among_other_conversations(realistic):
    conversations, (rows,) = _rows(realistic, "arrival")
    assert [r[9] for r in rows] == sorted(r[9] for r in rows)
    assert _runs(rows) > 1.5 * len(conversations)  # a conversation's sessions lie among those of others
    seqs: dict = {}
    for row in rows:
        seqs.setdefault(row[0], []).append(row[2])
    assert all(s == list(range(1, len(s) + 1)) for s in seqs.values())


def test_realistic_rows_shuffled_lie_among_random_others(realistic):
    conversations, (rows, arrived) = _rows(realistic, "shuffled", "arrival")
    assert _runs(rows) > 0.9 * len(rows)  # hardly two turns of one conversation side by side
    assert sorted(map(_key, rows)) == sorted(map(_key, arrived))


def test_realistic_rows_of_a_bulk_import_keep_each_conversation_together(realistic):
    conversations, (rows, arrived) = _rows(realistic, "conversation", "arrival")
    assert [r[0] for r in rows] == [c.id for c in conversations for _ in range(c.length)]
    assert _runs(rows) == len(conversations)
    assert sorted(map(_key, rows)) == sorted(map(_key, arrived))


def test_an_unknown_order_is_refused(realistic, scale, capsys):
    with pytest.raises(ValueError, match="unknown order 'random'"):
        _rows(realistic, "random")
    with pytest.raises(SystemExit):
        scale.parse_args(["--shape", "realistic", "--order", "random"])
    assert "invalid choice: 'random'" in capsys.readouterr().err
