"""Messages inserted by any client reach the worker: an outbox row and a NOTIFY per conversation."""

from __future__ import annotations

import uuid

import psycopg
from psycopg.rows import dict_row


def test_plain_sql_insert_notifies_and_writes_outbox(app, database_url):
    user = uuid.uuid4()
    conv = app.store.create_conversation(user)
    listener = psycopg.connect(database_url, autocommit=True)
    listener.execute("listen memctx_outbox")
    with psycopg.connect(database_url, row_factory=dict_row) as writer:
        ids = [r["id"] for r in writer.execute(
            "insert into memctx.messages (conversation_id, role, text) values (%s, 'user', 'a'), (%s, 'assistant', 'b') returning id",
            (conv.id, conv.id))]
        writer.commit()
        notes = list(listener.notifies(timeout=5, stop_after=1))
        assert [n.payload for n in notes] == [str(conv.id)]
        rows = writer.execute("select message_id, seq, kind, processed_at from memctx.outbox where conversation_id = %s order by id",
                              (conv.id,)).fetchall()
        assert [(r["message_id"], r["seq"], r["kind"], r["processed_at"]) for r in rows] == [
            (ids[0], 1, "message", None), (ids[1], 2, "message", None)]
    listener.close()


def test_rolled_back_insert_leaves_no_outbox_row_and_no_notify(app, database_url):
    user = uuid.uuid4()
    conv = app.store.create_conversation(user)
    listener = psycopg.connect(database_url, autocommit=True)
    listener.execute("listen memctx_outbox")
    with psycopg.connect(database_url) as writer:
        writer.execute("insert into memctx.messages (conversation_id, role, text) values (%s, 'user', 'x')", (conv.id,))
        writer.rollback()
        assert list(listener.notifies(timeout=0.5)) == []
        assert writer.execute("select count(*) from memctx.outbox where conversation_id = %s", (conv.id,)).fetchone()[0] == 0
    listener.close()
