"""Ingest end to end: a LoCoMo-format file, idempotent re-runs, bad files change nothing."""

from __future__ import annotations

import json
import secrets
import uuid

import psycopg
import pytest

from memctx.models import InvalidInput
from memctx.store.ingest import ingest, load_file, parse_jsonl
from support import row_counts


def test_a_locomo_file_is_stored_completely_and_once(app, locomo_path):
    user = uuid.uuid4()
    conversations = load_file(locomo_path, "locomo")
    first = ingest(app.store, conversations, user)
    assert len(first) == 2 and sum(r.messages for r in first) == 1006
    with app.pool.connection() as conn:
        row = conn.execute("""select count(*) as n, count(embedding) as embedded, count(token_count) as counted,
                                     count(distinct conversation_id) as convs
                                from memctx.messages where user_id = %s""", (user,)).fetchone()
        assert row == {"n": 1006, "embedded": 1006, "counted": 1006, "convs": 2}
        d311 = conn.execute("select m.role, m.text, m.metadata from memctx.messages m join memctx.conversations c on c.id = m.conversation_id "
                            "where c.external_id = 'mini-1' and m.external_id = 'D1:3'").fetchone()
        assert d311["role"] == "user" and "spreadsheet" in d311["text"] and d311["metadata"]["speaker"] == "Priya"
    second = ingest(app.store, conversations, user)
    assert sum(r.messages for r in second) == 0 and sum(r.skipped for r in second) == 1006
    assert [r.conversation_id for r in second] == [r.conversation_id for r in first]


def test_oversize_message_anywhere_in_the_file_stores_nothing(app):
    user = uuid.uuid4()
    huge = "token " * (app.settings.max_message_tokens + 1)
    lines = [{"conversation": "a", "role": "user", "content": "fine"},
             {"conversation": "b", "role": "user", "content": "fine too"},
             {"conversation": "b", "role": "user", "content": huge}]
    conversations = parse_jsonl("\n".join(json.dumps(o) for o in lines), "f.jsonl")
    with pytest.raises(InvalidInput, match="f.jsonl line 3"):
        ingest(app.store, conversations, user)
    assert app.store.list_conversations(user) == []




GOOD = [{"conversation": "a", "role": "user", "content": "Book a table for four.", "id": "a1"},
        {"conversation": "a", "role": "assistant", "content": "Done, 8 pm.", "id": "a2"},
        {"conversation": "b", "role": "user", "content": "Order more flour.", "id": "b1"}]


def _write(path, lines):
    path.write_text("\n".join(json.dumps(o) for o in lines) + "\n")
    return path


def test_duplicate_id_in_the_last_conversation_stores_nothing_in_any_table(app, tmp_path):
    user = uuid.uuid4()
    good = _write(tmp_path / "good.jsonl", GOOD)
    ingest(app.store, load_file(good, "jsonl"), user)
    with app.pool.connection() as conn:
        before = row_counts(conn)
    again = ingest(app.store, load_file(good, "jsonl"), user)
    assert [(r.messages, r.skipped) for r in again] == [(0, 2), (0, 1)]
    bad = _write(tmp_path / "bad.jsonl", GOOD + [
        {"conversation": "new", "role": "user", "content": "first", "id": "n1"},
        {"conversation": "c", "role": "user", "content": "hello", "id": "c1"},
        {"conversation": "c", "role": "user", "content": "hello again", "id": "c1"}])
    with pytest.raises(InvalidInput, match=r"bad.jsonl line 6: id 'c1' appears twice .*first at bad.jsonl line 5"):
        ingest(app.store, load_file(bad, "jsonl"), user)
    with app.pool.connection() as conn:
        assert row_counts(conn) == before  # the re-run stored nothing new either


def test_a_database_error_in_the_last_conversation_rolls_back_the_whole_file(app):
    """Conversations written before the failing one (in earlier groups) are rolled back too."""
    user = uuid.uuid4()
    with app.pool.connection() as conn:
        before = row_counts(conn)
    too_long_for_an_index = secrets.token_urlsafe(6000)  # passes validation; the btree index refuses it
    lines = GOOD + [{"conversation": "c", "role": "user", "content": "x", "id": too_long_for_an_index}]
    conversations = parse_jsonl("\n".join(json.dumps(o) for o in lines), "f.jsonl")
    with pytest.raises(psycopg.errors.ProgramLimitExceeded):
        ingest(app.store, conversations, user, group_size=1)  # one group per conversation
    with app.pool.connection() as conn:
        assert row_counts(conn) == before
    assert app.store.list_conversations(user) == []
