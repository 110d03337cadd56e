"""Row-level security: as `authenticated` with JWT claims, a user sees and writes only their rows."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from psycopg.rows import dict_row

from support import TABLES, as_user, seed_every_table

VIEWS = ("live_summaries",)  # security_invoker: RLS applies as the caller


@pytest.fixture
def two_users(app):
    a, b = uuid.uuid4(), uuid.uuid4()
    return a, b, seed_every_table(app, a), seed_every_table(app, b)


def test_each_user_sees_only_their_rows(database_url, two_users):
    a, b, conv_a, conv_b = two_users
    with as_user(database_url, b) as conn:
        for table in TABLES + VIEWS:
            rows = conn.execute(f"select user_id from memctx.{table}").fetchall()
            assert rows, f"B should see their own {table}"
            assert {r["user_id"] for r in rows} == {b}, table
        assert conn.execute("select count(*) as n from memctx.messages where conversation_id = %s", (conv_a.id,)).fetchone()["n"] == 0


def test_a_user_cannot_write_as_another(database_url, two_users):
    a, b, conv_a, conv_b = two_users
    with as_user(database_url, b) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("insert into memctx.conversations (user_id) values (%s)", (a,))
        conn.rollback()
        with pytest.raises(psycopg.Error):  # A's conversation is invisible to B: the seq trigger finds none
            conn.execute("insert into memctx.messages (conversation_id, user_id, role, text) values (%s, %s, 'user', 'x')",
                         (conv_a.id, b))
        conn.rollback()
        with pytest.raises(psycopg.Error):
            conn.execute("insert into memctx.messages (conversation_id, user_id, role, text) values (%s, %s, 'user', 'x')",
                         (conv_a.id, a))
        conn.rollback()
        assert conn.execute("update memctx.messages set text = 'pwned' where user_id = %s", (a,)).rowcount == 0
        assert conn.execute("delete from memctx.conversations where id = %s", (conv_a.id,)).rowcount == 0
        conn.commit()
    with psycopg.connect(database_url, row_factory=dict_row) as admin:
        texts = [r["text"] for r in admin.execute("select text from memctx.messages where user_id = %s order by seq", (a,))]
        assert texts == ["my secret", "ok"]


def test_a_user_can_write_their_own_rows_through_sql(database_url, two_users):
    a, b, conv_a, conv_b = two_users
    with as_user(database_url, b) as conn:
        row = conn.execute("insert into memctx.messages (conversation_id, role, text) values (%s, 'user', 'hello') returning seq, user_id",
                           (conv_b.id,)).fetchone()
        assert row == {"seq": 3, "user_id": b}
        conn.commit()


def test_anon_reads_nothing(database_url, two_users):
    with psycopg.connect(database_url) as conn:
        conn.execute("set role anon")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select * from memctx.messages")


def test_service_role_sees_everyone(database_url, two_users):
    a, b, *_ = two_users
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        conn.execute("set role service_role")
        users = {r["user_id"] for r in conn.execute("select distinct user_id from memctx.messages")}
        assert {a, b} <= users
