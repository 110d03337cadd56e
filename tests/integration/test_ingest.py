"""Ingest end to end: LoCoMo dev split, idempotent re-runs, bad files change nothing."""

from __future__ import annotations

import json
import uuid

import pytest

from memctx.ingest import ingest, load_file, parse_jsonl
from memctx.models import InvalidInput


def test_locomo_dev_split_is_stored_completely_and_once(app, locomo_path):
    user = uuid.uuid4()
    conversations = load_file(locomo_path, "locomo")
    first = ingest(app.store, conversations, user)
    assert len(first) == 5 and sum(r.messages for r in first) == 2760
    with app.pool.connection() as conn:
        row = conn.execute("""select count(*) as n, count(embedding) as embedded, count(token_count) as counted,
                                     count(distinct conversation_id) as convs
                                from memctx.messages where user_id = %s""", (user,)).fetchone()
        assert row == {"n": 2760, "embedded": 2760, "counted": 2760, "convs": 5}
        d311 = conn.execute("select m.role, m.text, m.metadata from memctx.messages m join memctx.conversations c on c.id = m.conversation_id "
                            "where c.external_id = 'conv-26' and m.external_id = 'D1:3'").fetchone()
        assert d311["role"] == "user" and "support group" in d311["text"] and d311["metadata"]["speaker"] == "Caroline"
    second = ingest(app.store, conversations, user)
    assert sum(r.messages for r in second) == 0 and sum(r.skipped for r in second) == 2760
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
