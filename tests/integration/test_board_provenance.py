"""The board in the database: every item cites its messages (ids and external ids), `memctx board
--json` shows them with facts per person, edits keep the sources, and a correction leaves only the
current statement on the board and in the working context."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from memctx.assemble import get_working_context
from memctx.cli import app as cli
from memctx.models import NewMessage
from memctx.pipeline import catchup
from memctx.pipeline.board import edit_board_item, get_board
from memctx.store import DEFAULT_USER

USER = DEFAULT_USER
TURNS = [
    ("user", "Ana", "I adopted a dog named Max in May."),
    ("assistant", "Bo", "Lovely! What breed is he?"),
    ("user", "Ana", "He is a border collie. I prefer morning walks. Please don't book evening slots."),
    ("assistant", "Bo", "Got it."),
    ("user", "Ana", "I'll send you the vet's address on Monday."),
    ("user", "Ana", "Actually, I prefer evening walks now."),
]


def _conversation(app, filler: int = 0):
    """The walks chat, after `filler` turns of small talk (a longer history is compressed)."""
    conv = app.store.create_conversation(USER, external_id="walks")
    small_talk = [NewMessage.build("user" if i % 2 else "assistant", f"Small talk number {i} about the weather "
                                   f"in town and the bus number {i + 7}.", external_id=f"f{i}",
                                   metadata={"speaker": "Bo" if i % 2 == 0 else "Ana"}) for i in range(filler)]
    messages = small_talk + [NewMessage.build(role, text, external_id=f"t{i}", metadata={"speaker": who})
                             for i, (role, who, text) in enumerate(TURNS, start=1)]
    app.store.append_messages(USER, conv.id, messages)
    catchup.catch_up(app, USER, conv.id, force_board=True)
    return conv


def test_board_items_cite_their_messages_and_the_cli_prints_them(app, database_url, monkeypatch, tmp_path):
    monkeypatch.setenv("MEMCTX_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMCTX_HOME", str(tmp_path))
    conv = _conversation(app)
    ids = {m.external_id: str(m.id) for m in app.store.list_messages(USER, conv.id)}
    out = CliRunner().invoke(cli, ["board", "walks", "--json"])
    assert out.exit_code == 0, out.output
    view = json.loads(out.stdout)
    assert view["key_facts"]["Ana"][0] == {"text": "I adopted a dog named Max in May",
                                           "sources": [{"id": ids["t1"], "external_id": "t1"}]}
    action = view["action_items"][0]
    assert action["text"].endswith("I'll send you the vet's address on Monday.")
    assert action["sources"] == [{"id": ids["t5"], "external_id": "t5"}]
    for section in ("key_facts", "entities"):
        assert all(item["sources"] for group in view[section].values() for item in group), section
    for section in ("topics", "action_items", "constraints"):
        assert view[section] and all(item["sources"] for item in view[section]), section
    # The correction replaced the morning walks; "please don't book evening slots" is another rule.
    assert [c["text"] for c in view["constraints"]] == ["Ana: Please don't book evening slots.",
                                                        "Ana: Actually, I prefer evening walks now."]
    listing = CliRunner().invoke(cli, ["board", "walks"])
    assert listing.exit_code == 0 and "[t6]" in listing.stdout and "Key facts" in listing.stdout
    assert "0. Ana: I adopted a dog named Max in May  [t1]" in listing.stdout  # the fact's person, once


def test_an_edit_keeps_the_sources_and_marks_the_item(app, database_url, monkeypatch, tmp_path):
    monkeypatch.setenv("MEMCTX_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMCTX_HOME", str(tmp_path))
    conv = _conversation(app)
    before = get_board(app, USER, conv.id).section("key_facts")[0]
    out = CliRunner().invoke(cli, ["edit-board", "walks", "key_facts", "0", "Ana: adopted Max, a border collie"])
    assert out.exit_code == 0, out.output
    after = get_board(app, USER, conv.id).section("key_facts")[0]
    # Facts are grouped per person: the name typed before the fact is its group, not its text.
    assert (after.text, after.group, after.edited, after.sources) == ("adopted Max, a border collie", "Ana", True,
                                                                      before.sources)
    assert json.loads(CliRunner().invoke(cli, ["board", "walks", "--json"]).stdout)["key_facts"]["Ana"][0]["edited"]
    # The next update keeps the edit.
    app.store.append_messages(USER, conv.id, [NewMessage.build("assistant", "Noted.", metadata={"speaker": "Bo"})])
    catchup.catch_up(app, USER, conv.id, force_board=True)
    assert get_board(app, USER, conv.id).section("key_facts")[0] == after
    bad = CliRunner().invoke(cli, ["edit-board", "walks", "key_facts", "99", "x"])
    assert bad.exit_code == 2 and "no item 99" in bad.output
    try:
        edit_board_item(app, USER, conv.id, "moods", 0, "x")
    except LookupError as exc:
        assert "key_facts" in str(exc)
    else:
        raise AssertionError("an unknown section is refused")


def test_the_context_shows_only_the_corrected_preference(app):
    conv = _conversation(app, filler=60)
    for budget in (300, 500):
        wc = get_working_context(app, conv.id, "Which walks does Ana like?", budget, user=USER)
        assert "Actually, I prefer evening walks now." in wc.text
        stated = [line for m in wc.messages if m["role"] == "system" for line in m["content"].splitlines()
                  if "I prefer morning walks" in line and "(replaced" not in line]
        assert stated == [], wc.text  # in summaries and memories the old preference is gone or marked


def test_a_short_history_is_the_context_with_the_correction_after_the_statement(app):
    conv = _conversation(app)
    wc = get_working_context(app, conv.id, "Which walks does Ana like?", 2000, user=USER)
    assert [m["content"] for m in wc.messages[1:-1]] == [text for _, _, text in TURNS]
