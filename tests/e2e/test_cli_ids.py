"""Every command that takes a conversation takes its UUID or the user's own external id; bad ids
and unknown ones are one line on stderr with exit code 2; bracketed text survives rich tables."""

from __future__ import annotations

import json
import uuid

import pytest
from typer.testing import CliRunner

from memctx.cli import app as cli

TURNS = [
    {"role": "user", "content": "We land in Lisbon on 12 May; find us a flight back on the 19th."},
    {"role": "assistant", "content": [{"type": "tool_call", "name": "flights", "arguments": {"to": "BER"}}]},
    {"role": "tool", "content": [{"type": "tool_result", "content": "TP 542 at 10:05"}]},
    {"role": "user", "content": [{"type": "text", "text": "Here is where we stay."},
                                 {"type": "image", "url": "http://i/map.png", "caption": "map of Lisbon"}]},
    {"role": "assistant", "content": "TP 542 on the 19th at 10:05 fits; your hotel is near Rossio."},
    {"role": "user", "content": "Book it. My brother Tomás turns 30 on the 15th, plan a dinner."},
]


@pytest.fixture
def run(database_url, monkeypatch, tmp_path):
    """Invoke the CLI in-process against the test database; returns the click Result."""
    monkeypatch.setenv("MEMCTX_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMCTX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "250")  # rich tables do not fold a line in two
    runner = CliRunner()
    return lambda *args: runner.invoke(cli, [str(a) for a in args])


@pytest.fixture
def support_42(run, tmp_path) -> str:
    """The conversation `support-42`, ingested through the CLI; returns its UUID."""
    path = tmp_path / "support.jsonl"
    path.write_text("\n".join(json.dumps({"conversation": "support-42", "id": f"m{i}", **t})
                              for i, t in enumerate(TURNS, start=1)) + "\n")
    out = run("ingest", path)
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)["conversation_id"]


def _one_error_line(out, *expected: str) -> None:
    assert out.exit_code == 2, out.output
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    assert all(text in lines[0] for text in expected), lines[0]
    assert out.stdout == ""


def test_every_conversation_command_takes_the_external_id(run, support_42):
    by_name = [json.loads(line) for line in run("messages", "support-42").stdout.splitlines()]
    by_uuid = [json.loads(line) for line in run("messages", support_42).stdout.splitlines()]
    assert [m["external_id"] for m in by_name] == [f"m{i}" for i in range(1, 7)] and by_name == by_uuid

    summarized = run("summarize", "support-42")
    assert summarized.exit_code == 0, summarized.output
    assert json.loads(summarized.stdout)["summaries_written"] >= 1
    chain = run("chain", "support-42", "--json")
    assert chain.exit_code == 0 and chain.stdout.strip(), chain.output
    board = run("board", "support-42", "--json")
    assert board.exit_code == 0 and json.loads(board.stdout) is not None, board.output

    context = run("context", "support-42", "-q", "When is the flight back?", "--json")
    assert context.exit_code == 0 and "TP 542" in context.stdout, context.output
    search = run("search", "flight back", "-c", "support-42")
    assert search.exit_code == 0 and all(json.loads(line)["conversation_id"] == support_42
                                         for line in search.stdout.splitlines()), search.output

    closed = run("close", "support-42")
    assert closed.exit_code == 0 and json.loads(closed.stdout)["conversation_id"] == support_42, closed.output
    note = run("continuity", "--current", "support-42")
    assert note.exit_code == 0 and json.loads(note.stdout) is None, note.output  # its only conversation is excluded


def test_bracketed_text_survives_the_chain_table(run, support_42):
    table = run("chain", support_42)
    assert table.exit_code == 0, table.output
    assert '[tool call flights({"to": "BER"})]' in table.stdout
    assert "[image: map of Lisbon]" in table.stdout


@pytest.mark.parametrize("command", [
    ["messages"], ["chain"], ["board"], ["summarize"], ["close"], ["context", "-q", "hi"], ["search", "hi", "-c"],
    ["continuity", "--current"],
])
def test_unknown_and_other_users_conversations_are_one_line_exit_2(run, support_42, command):
    other_user = str(uuid.uuid4())
    for conversation, user in [("support-41", None), ("00000000-0000-4000-8000-00000000dead", None),
                               ("support-42", other_user), (support_42, other_user)]:
        args = [*command, conversation] + (["--user", user] if user else [])
        _one_error_line(run(*args), f"unknown conversation '{conversation}'")


@pytest.mark.parametrize("args", [
    ["forget-user", "not-a-uuid"], ["messages", "support-42", "--user", "nope"], ["chain", "x", "--user", "nope"],
    ["context", "x", "-q", "hi", "--user", "nope"], ["continuity", "--user", "nope"],
    ["edit-summary", "not-a-uuid", "new text"], ["edit-summary", "00000000-0000-4000-8000-00000000dead", "new text"],
    ["ingest", "memctx/data/demo.jsonl", "--user", "nope"],
])
def test_bad_input_is_one_line_and_exit_2_never_a_traceback(run, args):
    out = run(*args)
    assert out.exception is None or isinstance(out.exception, SystemExit), out.exception
    _one_error_line(out)
