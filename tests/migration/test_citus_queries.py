"""The queries can run on Citus distributed by user_id, as docs/SCALING.md describes.

test_citus_ready.py checks the keys; this checks what the queries and triggers do with them.
Citus routes a statement to one node only when every distributed table it reads is filtered or
joined on user_id, runs `FOR UPDATE` on a single shard only, and runs a trigger on the shard that
holds the row, where a NOTIFY reaches no dispatcher. Read from memctx/sql/*.sql and from the
catalog of a database built from every migration; no Citus server is needed.
"""

from __future__ import annotations

import re
import uuid

import psycopg
import pytest
from psycopg.rows import dict_row

from memctx.models import NewMessage
from memctx.sql import QUERIES

# Tables and views whose rows belong to one user (test_citus_ready.DISTRIBUTED, and the views over them).
TENANT = ("conversations", "messages", "summaries", "summary_boards", "conversation_summaries",
          "working_memory_chunks", "outbox", "context_requests", "idempotency_keys", "search_cache",
          "live_summaries", "conversation_overview", "token_savings", "worker_backlog")

# Queries that read across users on purpose (on Citus: a fan-out to every shard, without locks).
ACROSS_USERS = {
    "outbox_backlog": "the worker's backlog gauge, over every pending row",
    "purge_processed_outbox": "the sweep deletes every user's old processed rows",
    "search_global_dense": "the benchmark's global HNSW top-k",
    "lock_unembedded_summaries": "the summary backfill claims the oldest rows of any user",
    "locked_unembedded_summaries": "re-reads the rows that claim locked, of any users",
    "unembedded_summary_count": "the backfill's backlog, of everyone or of one conversation",
    "fill_message_codes": "a bulk import's last step: the codes of every message it wrote with triggers off",
    "fill_message_terms": "a bulk import's last step: the full-text rows of every message it wrote with triggers off",
    "user_without_lexemes": "the idle backfill finds a user with messages stored before 0025",
}

_KEYWORDS = ("where|on|set|order|group|limit|join|left|right|cross|using|returning|values|select|for|inner|"
             "natural|union|having|window|offset")
_REFERENCE = re.compile(rf"\b(?:from|join|update|into)\s+memctx\.({'|'.join(TENANT)})\b"
                        rf"(?:\s+(?:as\s+)?(?!(?:{_KEYWORDS})\b)([a-z_][a-z0-9_]*))?", re.IGNORECASE)


def _code(text: str) -> str:
    return re.sub(r"--[^\n]*", "", text)


def unrouted(sql: str, *, joins_only: bool = False) -> list[str]:
    """Each reference to a tenant table or view that no user_id test follows: `alias.user_id`
    after an aliased reference (in its join, its WHERE or a later lateral), `user_id` after a
    bare one; with `joins_only`, every reference but the first (a view's rows are filtered by
    whoever reads it). A textual check: it cannot prove a predicate right, only find one missing."""
    code = _code(sql)
    missing = []
    for ref in list(_REFERENCE.finditer(code))[1 if joins_only else 0:]:
        table, alias = ref.group(1), ref.group(2)
        rest = code[ref.end():]
        if not re.search(rf"\b{alias}\.user_id\b" if alias else r"\buser_id\b", rest):
            missing.append(f"{table} {alias or ''}".strip())
    return missing


def test_the_check_finds_a_lookup_without_user_id():
    assert unrouted("select * from memctx.messages m where m.conversation_id = %(c)s") == ["messages m"]
    assert unrouted("select * from memctx.conversations c join memctx.messages m on m.conversation_id = c.id "
                    "where c.user_id = %(u)s") == ["messages m"]
    assert unrouted("select 1 from memctx.outbox where id = 1") == ["outbox"]
    assert unrouted("select * from memctx.messages m where m.user_id = %(u)s -- m.user_id") == []
    assert unrouted("select * from memctx.conversations c join memctx.messages m on m.conversation_id = c.id",
                    joins_only=True) == ["messages m"]


def test_every_query_of_one_user_names_user_id_for_each_table():
    """Each lookup, join and lateral range of a per-user query names user_id, so that Citus routes
    the whole statement to the user's node (the `wanted` neighbours of search hits, the summary
    rows behind live_summaries, the board of current_context, the dashboards' joins...)."""
    found = {name: missing for name, sql in QUERIES.items() if (missing := unrouted(sql))}
    assert set(found) == set(ACROSS_USERS), (
        "name user_id in these lookups, or add the query to ACROSS_USERS with the reason: "
        f"{ {n: m for n, m in found.items() if n not in ACROSS_USERS} }; "
        f"no longer across users: {sorted(set(ACROSS_USERS) - set(found))}")


def test_every_lock_is_taken_on_one_users_rows():
    """Citus runs FOR UPDATE on one shard only: every locking query is scoped to one user."""
    locking = {name: sql for name, sql in QUERIES.items() if re.search(r"\bfor\s+update\b", _code(sql), re.I)}
    assert {"claim_outbox", "lock_conversation_seq"} <= set(locking)
    for name, sql in locking.items():
        assert re.search(r"\buser_id\s*=\s*%\(user_id\)s", _code(sql)), name


def test_no_statement_writes_a_reference_table_beside_tenant_rows():
    """api_keys and embedding_space are reference tables on Citus (copied to every node): a
    statement that modifies one cannot also touch a user's shard (forget_user deletes the keys in
    a statement of its own)."""
    writes = re.compile(r"\b(?:delete\s+from|update|insert\s+into)\s+memctx\.(?:api_keys|embedding_space)\b", re.I)
    writers = {name for name, sql in QUERIES.items() if writes.search(_code(sql))}
    assert "forget_user_keys" in writers
    for name in writers:
        assert not _REFERENCE.search(_code(QUERIES[name])), name


def test_claims_go_user_by_user():
    claim, users = _code(QUERIES["claim_outbox"]), _code(QUERIES["claimable_outbox_users"])
    assert re.search(r"where user_id = %\(user_id\)s::uuid", claim)
    assert not re.search(r"\bfor\s+update\b", users), "the list of users to claim for takes no lock"


def test_idle_closes_join_on_user_id():
    """enqueue_idle_closes runs across users, and each of its joins stays on one shard."""
    code = _code(QUERIES["enqueue_idle_closes"])
    for join in ("m.user_id = c.user_id", "s.user_id = c.user_id", "o.user_id = c.user_id"):
        assert join in code


def test_the_worker_is_woken_by_a_statement_that_reads_no_table():
    """On Citus the messages trigger runs on the shard's node, where no dispatcher LISTENs; the
    wake-up memctx sends itself reads no table, so it runs on the node the caller is connected to."""
    code = _code(QUERIES["notify_outbox"])
    assert "pg_notify('memctx_outbox'" in code
    assert not re.search(r"\bmemctx\.", code)


@pytest.fixture
def catalog(database_url):
    with psycopg.connect(database_url, row_factory=dict_row, autocommit=True) as conn:
        yield conn


def test_triggers_of_tenant_tables_find_rows_by_user_id(catalog):
    """A trigger runs on the shard of its row (citus.enable_unsafe_triggers) and may touch only
    that user's colocated rows: every lookup in a trigger function of a tenant table names
    user_id. The seq trigger's lookup by id for an insert without user_id is the one exception:
    plain SQL under row-level security on one server (Citus refuses an insert without user_id)."""
    functions = catalog.execute("""
        select distinct p.proname, p.prosrc
          from pg_trigger t join pg_proc p on p.oid = t.tgfoid
         where t.tgrelid = any(array['memctx.messages', 'memctx.conversations', 'memctx.summaries',
                                     'memctx.outbox']::regclass[]) and not t.tgisinternal""").fetchall()
    assert "messages_assign_seq" in {f["proname"] for f in functions}
    for f in functions:
        source = f["prosrc"]
        if f["proname"] == "messages_assign_seq":
            by_id, _, source = source.partition("else")
            assert "if new.user_id is null then" in by_id, "only an insert without user_id is looked up by id"
        assert unrouted(source) == [], f["proname"]


def test_views_join_tenant_tables_on_user_id(catalog):
    """A view over several tenant tables (conversation_overview: messages, summaries and the board
    per conversation) joins each on user_id as well, so a query through it stays on one node."""
    views = catalog.execute("""
        select c.oid::regclass::text as name, pg_get_viewdef(c.oid) as sql
          from pg_class c where c.relkind = 'v' and c.relnamespace = 'memctx'::regnamespace""").fetchall()
    assert "memctx.conversation_overview" in {v["name"] for v in views}
    for view in views:
        assert unrouted(view["sql"], joins_only=True) == [], view["name"]


def test_an_insert_names_a_conversation_of_its_user(app, database_url):
    """The seq trigger looks the conversation up by (id, user_id): another user's id is refused as
    a missing conversation, and an insert without user_id still takes the conversation's."""
    owner, other = uuid.uuid4(), uuid.uuid4()
    conv = app.store.create_conversation(owner)
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        with pytest.raises(psycopg.errors.ForeignKeyViolation, match=f"does not exist for user {other}"):
            conn.execute("insert into memctx.messages (conversation_id, user_id, role, text) values (%s, %s, 'user', 'x')",
                         (conv.id, other))
        conn.rollback()
        row = conn.execute("insert into memctx.messages (conversation_id, role, text) values (%s, 'user', 'hi') "
                           "returning user_id, seq", (conv.id,)).fetchone()
        assert row == {"user_id": owner, "seq": 1}


def test_the_store_wakes_the_worker_without_the_triggers_notify(app, database_url):
    """With the trigger's NOTIFY gone (as on a Citus worker node), an append still wakes a
    listener once, at commit."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        source = conn.execute("select prosrc from pg_proc where proname = 'messages_enqueue'").fetchone()[0]
        quiet = re.sub(r"for conv in .*?end loop;", "", source, flags=re.S)
        assert quiet != source
        conn.execute(f"create or replace function memctx.messages_enqueue() returns trigger language plpgsql "
                     f"set search_path = '' as $body${quiet}$body$")
    user = uuid.uuid4()
    conv = app.store.create_conversation(user)
    with psycopg.connect(database_url, autocommit=True) as listener:
        listener.execute("listen memctx_outbox")
        app.store.append_messages(user, conv.id, [NewMessage.build("user", "one"), NewMessage.build("assistant", "two")],
                                  embed=False)
        assert [n.payload for n in listener.notifies(timeout=5, stop_after=1)] == [str(conv.id)]
        assert list(listener.notifies(timeout=0.3)) == []
