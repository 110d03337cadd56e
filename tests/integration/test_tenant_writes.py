"""No tenant writes into, or learns about, another tenant's conversation.

As role `authenticated` with JWT claims, every write that names another user's conversation (or
summary, message, …) fails exactly as the same write naming an id that exists nowhere: same
error class, same message once the probed id is masked, and nothing is written. Otherwise the
error would be an oracle that tells the caller which ids exist.
"""

from __future__ import annotations

import re
import uuid

import psycopg
import pytest
from psycopg.rows import dict_row

from support import TABLES, as_user, seed_every_table



def _seed(app, user):
    conv = seed_every_table(app, user)
    with app.pool.connection() as conn:
        ids = {t: conn.execute(f"select id from memctx.{t} where user_id = %s limit 1", (user,)).fetchone()["id"]
               for t in ("messages", "summaries", "working_memory_chunks", "outbox")}
    return {"conversation": conv.id, **ids}


@pytest.fixture
def tenants(app):
    a, b = uuid.uuid4(), uuid.uuid4()
    return a, b, _seed(app, a), _seed(app, b)



def _fingerprint(database_url) -> dict[str, str]:
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        return {t: conn.execute(f"select md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as h "
                                f"from memctx.{t} x").fetchone()["h"] for t in TABLES}


# Writes by B that name `{probe}`: another tenant's id (A's) or an id that exists nowhere.
# `{own_*}` are B's own rows. Every table, insert / update / delete, and the unique keys that
# could collide with A's rows (A's board, long-term summary and live master summary).
WRITES = {
    "conversations": [
        "insert into memctx.conversations (id, user_id) values ('{probe}', '{me}')",
        "update memctx.conversations set id = '{probe}' where id = '{own_conversation}'",
        "update memctx.conversations set title = 'pwned' where id = '{probe}'",
        "delete from memctx.conversations where id = '{probe}'",
    ],
    "messages": [
        "insert into memctx.messages (conversation_id, role, text) values ('{probe}', 'user', 'x')",
        "insert into memctx.messages (conversation_id, user_id, role, text) values ('{probe}', '{me}', 'user', 'x')",
        "insert into memctx.messages (id, conversation_id, role, text) values ('{probe_messages}', '{own_conversation}', 'user', 'x')",
        "update memctx.messages set conversation_id = '{probe}' where id = '{own_messages}'",
        "update memctx.messages set id = '{probe_messages}' where id = '{own_messages}'",
        "update memctx.messages set text = 'pwned' where conversation_id = '{probe}'",
        "delete from memctx.messages where conversation_id = '{probe}'",
    ],
    "summaries": [
        "insert into memctx.summaries (conversation_id, user_id, level, is_master, content, source_kind, source_ids, "
        "first_seq, last_seq) values ('{probe}', '{me}', 1, true, 'forged master', 'message', array['{own_messages}'::uuid], 1, 1)",
        "insert into memctx.summaries (id, conversation_id, user_id, level, content, source_kind, source_ids, first_seq, "
        "last_seq) values ('{probe_summaries}', '{own_conversation}', '{me}', 1, 'x', 'message', array['{own_messages}'::uuid], 1, 1)",
        "update memctx.summaries set conversation_id = '{probe}' where id = '{own_summaries}'",
        "update memctx.summaries set superseded_by = '{probe_summaries}' where id = '{own_summaries}'",
        "update memctx.summaries set content = 'pwned' where conversation_id = '{probe}'",
        "delete from memctx.summaries where conversation_id = '{probe}'",
    ],
    "summary_boards": [
        "insert into memctx.summary_boards (conversation_id, user_id) values ('{probe}', '{me}')",
        "insert into memctx.summary_boards (conversation_id, user_id) values ('{probe}', '{me}') on conflict do nothing",
        "insert into memctx.summary_boards (conversation_id, user_id, current_summary) values ('{probe}', '{me}', 'pwned') "
        "on conflict (conversation_id, user_id) do update set current_summary = excluded.current_summary",
        "update memctx.summary_boards set conversation_id = '{probe}' where conversation_id = '{own_conversation}'",
        "update memctx.summary_boards set current_summary = 'pwned' where conversation_id = '{probe}'",
        "delete from memctx.summary_boards where conversation_id = '{probe}'",
    ],
    "working_memory_chunks": [
        "insert into memctx.working_memory_chunks (conversation_id, user_id, chunk_text) values ('{probe}', '{me}', 'x')",
        "insert into memctx.working_memory_chunks (id, conversation_id, user_id, chunk_text) "
        "values ('{probe_working_memory_chunks}', '{own_conversation}', '{me}', 'x')",
        "update memctx.working_memory_chunks set conversation_id = '{probe}' where id = '{own_working_memory_chunks}'",
        "update memctx.working_memory_chunks set chunk_text = 'pwned' where conversation_id = '{probe}'",
        "delete from memctx.working_memory_chunks where conversation_id = '{probe}'",
    ],
    "conversation_summaries": [
        "insert into memctx.conversation_summaries (conversation_id, user_id, summary) values ('{probe}', '{me}', 'x')",
        "insert into memctx.conversation_summaries (conversation_id, user_id, summary) values ('{probe}', '{me}', 'x') "
        "on conflict (conversation_id, user_id) do update set summary = 'pwned'",
        "update memctx.conversation_summaries set conversation_id = '{probe}' where conversation_id = '{own_conversation}'",
        "update memctx.conversation_summaries set summary = 'pwned' where conversation_id = '{probe}'",
        "delete from memctx.conversation_summaries where conversation_id = '{probe}'",
    ],
    "outbox": [
        "insert into memctx.outbox (user_id, conversation_id, kind) values ('{me}', '{probe}', 'summarize')",
        "insert into memctx.outbox (id, user_id, conversation_id, kind) overriding system value "
        "values ({probe_outbox}, '{me}', '{own_conversation}', 'summarize')",
        "update memctx.outbox set conversation_id = '{probe}' where id = {own_outbox}",
        "update memctx.outbox set processed_at = now() where conversation_id = '{probe}'",
        "delete from memctx.outbox where conversation_id = '{probe}'",
    ],
}


def _outcome(conn, sql: str, probe: str):
    """What the caller learns: the error (probed id masked) or the number of rows touched."""
    try:
        with conn.transaction():
            cur = conn.execute(sql)
            return ("ok", cur.rowcount)
    except psycopg.Error as exc:
        d = exc.diag
        fields = (d.message_primary, d.message_detail, d.message_hint, d.constraint_name, d.table_name,
                  d.column_name, d.context)
        return (d.sqlstate, *(re.sub(rf"\b{re.escape(probe)}\b", "<probe>", f) if f else f for f in fields))


def _probes(theirs, unknown_outbox_id):
    foreign = {"probe": theirs["conversation"], **{f"probe_{t}": theirs[t] for t in theirs if t != "conversation"}}
    unknown = {"probe": uuid.uuid4(), **{f"probe_{t}": uuid.uuid4() for t in theirs if t != "conversation"}}
    unknown["probe_outbox"] = unknown_outbox_id
    return foreign, unknown


@pytest.mark.parametrize("table", list(WRITES))
def test_another_tenants_ids_fail_exactly_like_unknown_ids_and_write_nothing(app, database_url, tenants, table):
    a, b, rows_a, rows_b = tenants
    before = _fingerprint(database_url)
    with app.pool.connection() as conn:
        free_outbox_id = conn.execute("select max(id) + 1000 as n from memctx.outbox").fetchone()["n"]
    foreign, unknown = _probes(rows_a, free_outbox_id)
    own = {"me": b, **{f"own_{t}": v for t, v in rows_b.items()}}
    with as_user(database_url, b) as conn:
        for template in WRITES[table]:
            key = re.search(r"\{(probe\w*)\}", template).group(1)
            theirs = _outcome(conn, template.format(**own, **foreign), str(foreign[key]))
            nobody = _outcome(conn, template.format(**own, **unknown), str(unknown[key]))
            assert theirs == nobody, template
            assert theirs[0] != "ok" or theirs[1] == 0, template  # a write that names them touches nothing
    assert _fingerprint(database_url) == before


def test_forged_outbox_rows_cannot_reach_another_tenants_conversation(app, database_url, tenants):
    a, b, rows_a, rows_b = tenants
    with as_user(database_url, b) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute("insert into memctx.outbox (user_id, conversation_id, kind) values (%s, %s, 'summarize')",
                         (b, rows_a["conversation"]))
        conn.rollback()
    with app.pool.connection() as conn:
        assert conn.execute("select count(*) as n from memctx.outbox where user_id = %s and conversation_id = %s",
                            (b, rows_a["conversation"])).fetchone()["n"] == 0


def test_a_tenant_still_writes_every_table_of_its_own_conversation(app, database_url, tenants):
    a, b, rows_a, rows_b = tenants
    conv = rows_b["conversation"]
    with as_user(database_url, b) as conn:
        new_conv = conn.execute("insert into memctx.conversations (user_id, title) values (%s, 't') returning id",
                                (b,)).fetchone()["id"]
        msg = conn.execute("insert into memctx.messages (conversation_id, role, content) values (%s, 'user', "
                           "'[{\"type\": \"text\", \"text\": \"hi\"}]') returning id, user_id, text", (new_conv,)).fetchone()
        assert msg["user_id"] == b and msg["text"] == "hi"
        conn.execute("insert into memctx.summaries (conversation_id, user_id, level, content, source_kind, source_ids, "
                     "first_seq, last_seq) values (%s, %s, 1, 'mine', 'message', array[%s::uuid], 1, 1)", (new_conv, b, msg["id"]))
        conn.execute("insert into memctx.summary_boards (conversation_id, user_id) values (%s, %s)", (new_conv, b))
        conn.execute("insert into memctx.summary_boards (conversation_id, user_id, current_summary) values (%s, %s, 'v2') "
                     "on conflict (conversation_id, user_id) do update set current_summary = excluded.current_summary", (conv, b))
        conn.execute("insert into memctx.working_memory_chunks (conversation_id, user_id, chunk_text) values (%s, %s, 'w')",
                     (new_conv, b))
        conn.execute("insert into memctx.conversation_summaries (conversation_id, user_id, summary) values (%s, %s, 's')",
                     (new_conv, b))
        conn.execute("insert into memctx.outbox (user_id, conversation_id, kind) values (%s, %s, 'summarize')", (b, new_conv))
        conn.execute("update memctx.summaries set superseded_by = null, content = 'edited' where conversation_id = %s", (conv,))
        conn.commit()
    with app.pool.connection() as conn:
        counts = {t: conn.execute(f"select count(*) as n from memctx.{t} where user_id = %s", (b,)).fetchone()["n"]
                  for t in TABLES}
        board = conn.execute("select current_summary from memctx.summary_boards where conversation_id = %s", (conv,)).fetchone()
    assert counts == {"conversations": 2, "messages": 3, "summaries": 2, "summary_boards": 2, "working_memory_chunks": 2,
                      "conversation_summaries": 2, "outbox": 4}
    assert board["current_summary"] == "v2"


def test_service_role_cannot_file_a_row_under_a_conversation_of_another_user(app, database_url, tenants):
    """The composite keys hold for roles that bypass RLS too (the worker, the service role)."""
    a, b, rows_a, rows_b = tenants
    with psycopg.connect(database_url) as conn:
        conn.execute("set role service_role")
        with pytest.raises(psycopg.errors.ForeignKeyViolation):
            conn.execute("insert into memctx.working_memory_chunks (conversation_id, user_id, chunk_text) values (%s, %s, 'x')",
                         (rows_a["conversation"], b))
