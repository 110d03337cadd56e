"""The message store against a real Postgres: append, read, delete, forget, bad input."""

from __future__ import annotations

import uuid

import pytest

from memctx.models import InvalidInput, NewMessage
from memctx.store import UnknownConversation


def _msgs(*pairs):
    return [NewMessage.build(role, text) for role, text in pairs]


def test_append_assigns_sequence_tokens_and_embeddings(app):
    user = uuid.uuid4()
    conv = app.store.create_conversation(user, external_id="c1", title="t")
    stored = app.store.append_messages(user, conv.id, _msgs(("user", "Hi there"), ("assistant", "Hello! How can I help?")))
    assert [m.seq for m in stored] == [1, 2]
    assert all(m.token_count and m.token_count > 0 for m in stored)
    assert all(m.has_embedding for m in stored)
    more = app.store.append_messages(user, conv.id, _msgs(("user", "Tell me about Lisbon")))
    assert more[0].seq == 3
    assert [m.text for m in app.store.list_messages(user, conv.id)] == ["Hi there", "Hello! How can I help?", "Tell me about Lisbon"]
    assert app.store.get_conversation(user, conv.id).message_count == 3


def test_conversation_get_or_create_by_external_id(app):
    user = uuid.uuid4()
    a = app.store.create_conversation(user, external_id="same")
    b = app.store.create_conversation(user, external_id="same")
    assert a.id == b.id
    other = app.store.create_conversation(uuid.uuid4(), external_id="same")
    assert other.id != a.id


def test_external_ids_make_appends_idempotent(app):
    user = uuid.uuid4()
    conv = app.store.create_conversation(user)
    msgs = [NewMessage.build("user", "one", external_id="m1"), NewMessage.build("assistant", "two", external_id="m2")]
    assert len(app.store.append_messages(user, conv.id, msgs)) == 2
    assert app.store.append_messages(user, conv.id, msgs) == []
    assert len(app.store.list_messages(user, conv.id)) == 2


@pytest.mark.parametrize("role,content,reason", [
    ("user", "nul \x00 byte", "NUL"),
    ("user", "bad \udcff surrogate", "UTF-8"),
    ("wizard", "hi", "unknown role"),
    ("user", [{"type": "video", "url": "x"}], "unknown type"),
])
def test_bad_messages_are_refused_and_change_nothing(app, role, content, reason):
    user = uuid.uuid4()
    conv = app.store.create_conversation(user)
    app.store.append_messages(user, conv.id, _msgs(("user", "kept")))
    with pytest.raises(InvalidInput, match=reason):
        app.store.append_messages(user, conv.id, [NewMessage.build("user", "fine"), NewMessage.build(role, content)])
    assert [m.text for m in app.store.list_messages(user, conv.id)] == ["kept"]


def test_oversize_message_is_refused_whole_batch(app):
    user = uuid.uuid4()
    conv = app.store.create_conversation(user)
    huge = "word " * (app.settings.max_message_tokens + 10)
    with pytest.raises(InvalidInput, match="over the limit"):
        app.store.append_messages(user, conv.id, _msgs(("user", "fine"), ("user", huge)))
    assert app.store.list_messages(user, conv.id) == []


def test_other_tenants_ids_look_unknown(app):
    alice, bob = uuid.uuid4(), uuid.uuid4()
    conv = app.store.create_conversation(alice)
    app.store.append_messages(alice, conv.id, _msgs(("user", "secret")))
    with pytest.raises(UnknownConversation):
        app.store.list_messages(bob, conv.id)
    with pytest.raises(UnknownConversation):
        app.store.append_messages(bob, conv.id, _msgs(("user", "intrusion")))
    with pytest.raises(UnknownConversation):
        app.store.delete_conversation(bob, conv.id)
    with pytest.raises(UnknownConversation):
        app.store.list_messages(alice, uuid.uuid4())
    assert [m.text for m in app.store.list_messages(alice, conv.id)] == ["secret"]


def test_delete_conversation_cascades(app):
    user = uuid.uuid4()
    conv = app.store.create_conversation(user)
    app.store.append_messages(user, conv.id, _msgs(("user", "a"), ("assistant", "b")))
    app.store.delete_conversation(user, conv.id)
    with pytest.raises(UnknownConversation):
        app.store.get_conversation(user, conv.id)
    with app.pool.connection() as conn:
        assert conn.execute("select count(*) as n from memctx.messages where conversation_id = %s", (conv.id,)).fetchone()["n"] == 0
        assert conn.execute("select count(*) as n from memctx.outbox where conversation_id = %s", (conv.id,)).fetchone()["n"] == 0


def test_forget_user_empties_every_table_and_spares_others(app):
    alice, bob = uuid.uuid4(), uuid.uuid4()
    for user in (alice, bob):
        conv = app.store.create_conversation(user)
        app.store.append_messages(user, conv.id, _msgs(("user", "x"), ("assistant", "y")))
        with app.pool.connection() as conn:
            conn.execute("insert into memctx.summary_boards (conversation_id, user_id) values (%s, %s)", (conv.id, user))
            conn.execute("insert into memctx.working_memory_chunks (conversation_id, user_id, chunk_text) values (%s, %s, 'c')", (conv.id, user))
    deleted = app.store.forget_user(alice)
    assert deleted["conversations"] == 1 and deleted["messages"] == 2
    with app.pool.connection() as conn:
        for table in ("conversations", "messages", "summaries", "summary_boards", "working_memory_chunks",
                      "conversation_summaries", "outbox"):
            n = conn.execute(f"select count(*) as n from memctx.{table} where user_id = %s", (alice,)).fetchone()["n"]
            assert n == 0, table
        assert conn.execute("select count(*) as n from memctx.messages where user_id = %s", (bob,)).fetchone()["n"] == 2


def _seqs(app, conv_id):
    with app.pool.connection() as conn:
        rows = conn.execute("select seq, text from memctx.messages where conversation_id = %s order by seq",
                            (conv_id,)).fetchall()
        stats = conn.execute("select last_seq, message_count from memctx.conversations where id = %s",
                             (conv_id,)).fetchone()
    return [(r["seq"], r["text"]) for r in rows], (stats["last_seq"], stats["message_count"])


def test_seq_follows_insert_order_across_interleaved_statements_and_writers(app):
    """The trigger numbers each message after the rows its own statement inserted before it and
    moves the conversation's counters once per statement (migration 0013)."""
    from support import run_concurrently

    user = uuid.uuid4()
    a, b = (app.store.create_conversation(user, external_id=name) for name in ("a", "b"))
    insert = ("insert into memctx.messages (conversation_id, role, content, text) "
              "select c, 'user', '[]'::jsonb, t from unnest(%s::uuid[], %s::text[]) with ordinality as x(c, t, n) order by n")
    with app.pool.connection() as conn:  # one transaction, two statements, both conversations interleaved
        conn.execute(insert, ([a.id, b.id, a.id, a.id, b.id], ["a1", "b1", "a2", "a3", "b2"]))
        conn.execute(insert, ([b.id, a.id], ["b3", "a4"]))
    assert _seqs(app, a.id) == ([(1, "a1"), (2, "a2"), (3, "a3"), (4, "a4")], (4, 4))
    assert _seqs(app, b.id) == ([(1, "b1"), (2, "b2"), (3, "b3")], (3, 3))

    # Concurrent writers into one conversation queue on its row: no seq twice, none skipped.
    run_concurrently(lambda: app.store.append_messages(user, a.id, _msgs(*[("user", "w")] * 20)), n=4)
    seqs, (last_seq, count) = _seqs(app, a.id)
    assert [s for s, _ in seqs] == list(range(1, 85)) and (last_seq, count) == (84, 84)

    # A deleted tail is never numbered again: seq continues after last_seq.
    with app.pool.connection() as conn:
        conn.execute("delete from memctx.messages where conversation_id = %s and seq > 80", (a.id,))
    assert app.store.append_messages(user, a.id, _msgs(("user", "after")))[0].seq == 85
