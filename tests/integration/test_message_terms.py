"""The full-text rows of message_terms (migration 0026): whoever writes a message, its row holds
the message's tsvector, position, date and length, so the full-text list can read its matches
there; only the owner reads them, nobody writes one directly, a deleted message takes its row
along, and a bulk import with triggers off gets them from fill_message_terms."""

from __future__ import annotations

import json
import uuid

import numpy as np
import psycopg
import pytest

from memctx.models import NewMessage
from memctx.retrieve import MemorySearch, SearchOptions
from memctx.retrieve.search import choose_plan
from memctx.sql import QUERIES
from test_message_lexemes import store_every_way

# every searchable message of a user against its full-text row: missing, stale or extra rows
MISMATCHED = """
select count(*) as n from (
  (select m.id, m.conversation_id, m.seq, m.created_at, length(m.tsv) as lexemes, m.tsv
     from memctx.messages m where m.user_id = %(user)s and m.tsv <> ''::tsvector
   except all
   select t.message_id, t.conversation_id, t.seq, t.created_at, t.lexemes, t.tsv
     from memctx.message_terms t where t.user_id = %(user)s)
  union all
  (select t.message_id, t.conversation_id, t.seq, t.created_at, t.lexemes, t.tsv
     from memctx.message_terms t where t.user_id = %(user)s
   except all
   select m.id, m.conversation_id, m.seq, m.created_at, length(m.tsv), m.tsv
     from memctx.messages m where m.user_id = %(user)s and m.tsv <> ''::tsvector)) x
"""


def _rows(conn, user) -> int:
    assert conn.execute(MISMATCHED, {"user": user}).fetchone()["n"] == 0
    return conn.execute("select count(*) as n from memctx.message_terms where user_id = %s", (user,)).fetchone()["n"]


def test_every_write_path_keeps_the_messages_full_text_rows(app):
    user = uuid.uuid4()
    conv = store_every_way(app, user)
    with app.pool.connection() as conn:
        searchable = conn.execute("select count(*) as n from memctx.messages where user_id = %s "
                                  "and tsv <> ''::tsvector", (user,)).fetchone()["n"]
        assert _rows(conn, user) == searchable == 6  # no row for the one without text
        seqs = [r["seq"] for r in conn.execute("select seq from memctx.messages where conversation_id = %s "
                                               "order by seq", (conv.id,))]
        edit = "update memctx.messages set {} where conversation_id = %s and seq = %s"
        conn.execute(edit.format("text = 'said otherwise, much longer than it was before'"), (conv.id, seqs[0]))
        conn.execute(edit.format("content = %s, text = ''"),
                     (json.dumps([{"type": "text", "text": "Bread and butter pudding"}]), conv.id, seqs[1]))
        conn.execute(edit.format("created_at = created_at - interval '40 days'"), (conv.id, seqs[2]))  # its date lexemes
        conn.execute(edit.format("content = '[]', text = ''"), (conv.id, seqs[3]))  # no searchable text left
        conn.execute(edit.format("content = %s, text = ''"),
                     (json.dumps([{"type": "text", "text": "now it says something"}]), conv.id, seqs[4]))
        message = conn.execute("select id from memctx.messages where conversation_id = %s and seq = %s",
                               (conv.id, seqs[0])).fetchone()["id"]
        version = "select xmin::text || '/' || xmax::text as v from memctx.message_terms where message_id = %s"
        before = conn.execute(version, (message,)).fetchone()["v"]
        conn.execute(QUERIES["set_message_embedding"], {"id": message, "user_id": user, "token_count": 7,
                                                        "embedding": np.ones(384, dtype=np.float32)})
        assert conn.execute(version, (message,)).fetchone()["v"] == before  # an embedding neither writes nor locks one
        assert _rows(conn, user) == 6
        conn.execute("delete from memctx.messages where conversation_id = %s and seq = %s", (conv.id, seqs[1]))
        assert _rows(conn, user) == 5


def test_a_tenant_reads_its_own_rows_and_writes_none(app):
    user = uuid.uuid4()
    conv = app.store.create_conversation(user, external_id="sql")
    with app.for_user(user).pool.connection() as conn:
        conn.execute("insert into memctx.messages (conversation_id, user_id, role, text) "
                     "values (%s, %s, 'user', 'written by a client with its own words')", (conv.id, user))
        assert conn.execute("select count(*) as n from memctx.message_terms").fetchone()["n"] == 1
    with app.for_user(uuid.uuid4()).pool.connection() as conn:
        assert conn.execute("select count(*) as n from memctx.message_terms").fetchone()["n"] == 0
    for forged in ("update memctx.message_terms set tsv = to_tsvector('english', 'forged')",
                   "insert into memctx.message_terms select message_id, user_id, conversation_id, seq + 1, "
                   "created_at, 1, to_tsvector('english', 'forged') from memctx.message_terms",
                   "delete from memctx.message_terms"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            with app.for_user(user).pool.connection() as conn:
                conn.execute(forged)
    assert app.store.forget_user(user)["messages"] == 1
    with app.pool.connection() as conn:
        assert _rows(conn, user) == 0


def test_a_bulk_import_without_triggers_is_found_by_full_text_after_fill_message_terms(app):
    """Rows written with triggers off have no full-text row, so the bounded plan's full-text list
    cannot find them until the import runs fill_message_terms (as bench/scale.py does)."""
    user = uuid.uuid4()
    conv = app.store.create_conversation(user, external_id="bulk")
    app.store.append_messages(user, conv.id, [NewMessage.build("user", f"an ordinary turn number {i}")
                                              for i in range(30)], embed=False)
    with app.pool.connection() as conn:
        conn.execute("set session_replication_role = replica")
        conn.execute("insert into memctx.messages (conversation_id, user_id, seq, role, text) "
                     "values (%s, %s, 10000, 'user', 'the zeppelin landed in Friedrichshafen')", (conv.id, user))
    opts = SearchOptions(threshold=1.1)  # only full-text hits pass
    with app.pool.connection() as conn:
        inputs = conn.execute(QUERIES["search_plan_inputs"], {"user_id": user, "conversation_id": conv.id}).fetchone()
    if not inputs["scope_tsv_index"]:
        pytest.skip("no btree_gin: the exact plan reads every turn's tsvector")
    assert choose_plan(31, 1000, opts, matches_indexed=True) == "bounded"
    search = MemorySearch(app.pool, app.embedder, opts)
    vec = np.random.default_rng(5).standard_normal(384).astype(np.float32)
    vec /= np.linalg.norm(vec)
    assert search.search(user, "zeppelin", conv.id, limit=5, query_vec=vec) == []
    with app.pool.connection() as conn:
        assert conn.execute(QUERIES["fill_message_terms"]).rowcount == 1
        assert _rows(conn, user) == 31
    found = search.search(user, "zeppelin", conv.id, limit=5, query_vec=vec)
    assert [f.text for f in found[0].fragments] == ["the zeppelin landed in Friedrichshafen"]
