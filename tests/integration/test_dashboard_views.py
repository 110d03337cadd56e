"""The dashboard views and the context request log, read as Supabase's `authenticated` role: each
user sees only their own rows, the numbers are right, the log holds no message text, and retention
prunes it."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import psycopg
import pytest

from memctx.assemble import get_working_context
from memctx.models import NewMessage
from memctx.store.requests import STORED_MESSAGE_OVERHEAD, ContextRequest, log_request
from support import as_user

ROOT = Path(__file__).resolve().parents[2]
SAVINGS_QUERY = ROOT / "docs" / "examples" / "token_savings.sql"
TEXTS = ["The launch moved to the ninth of May.", "Then we book the venue in Porto.", "Ana brings the banner.",
         "Who confirms the caterer?"]


def _seed(app, user):
    """A conversation with four messages, live summaries at levels 1 and 2, a superseded level-1
    summary, a master, a board, and one processed outbox row."""
    conv = app.store.create_conversation(user, external_id="launch")
    stored = app.store.append_messages(user, conv.id, [NewMessage.build(r, t) for r, t in
                                                       zip(["user", "assistant", "user", "assistant"], TEXTS)])
    ids = [m.id for m in stored]
    with app.pool.connection() as conn:
        for level, master, superseded in ((1, False, False), (1, False, False), (1, False, True), (2, False, False),
                                          (3, True, False)):
            conn.execute("""insert into memctx.summaries (conversation_id, user_id, level, is_master, content, source_kind,
                                                          source_ids, first_seq, last_seq, superseded_at)
                            values (%s, %s, %s, %s, 'summary', 'message', %s, 1, 2, case when %s then now() end)""",
                         (conv.id, user, level, master, ids[:2], superseded))
        conn.execute("insert into memctx.summary_boards (conversation_id, user_id, last_seq, updated_at) "
                     "values (%s, %s, 3, now() - interval '90 seconds')", (conv.id, user))
        conn.execute("update memctx.outbox set processed_at = created_at + interval '2 seconds' "
                     "where conversation_id = %s and seq = 1", (conv.id,))
    return conv, stored


@pytest.fixture
def two_users(app):
    a, b = uuid.uuid4(), uuid.uuid4()
    return {a: _seed(app, a), b: _seed(app, b)}


def _log(conn, user, conv, *, used, fixed=20, kind="context"):
    return log_request(conn, ContextRequest(user_id=user, conversation_id=conv, kind=kind, token_budget=1000,
                                            tokens_used=used, fixed_tokens=fixed, timings_ms={"total": 12.5},
                                            sources={"message": 3, "summary": 1}), retention_days=30)


def test_the_overview_counts_a_users_own_conversations_right(database_url, two_users):
    (a, (conv_a, stored_a)), (b, (conv_b, _)) = two_users.items()
    with as_user(database_url, a) as conn:
        rows = conn.execute("select * from memctx.conversation_overview").fetchall()
    assert [r["conversation_id"] for r in rows] == [conv_a.id]
    row = rows[0]
    assert row["message_count"] == 4
    assert row["message_tokens"] == sum(m.token_count for m in stored_a)
    assert row["live_summaries"] == 4
    assert row["summaries_by_level"] == {"1": 2, "2": 1, "master": 1}
    assert 89 <= row["board_age"].total_seconds() < 600
    assert row["messages_since_board"] == 1


def test_the_backlog_shows_a_users_pending_work_and_its_lag(database_url, two_users):
    (a, (conv_a, _)), _ = two_users.items()
    with as_user(database_url, a) as conn:
        rows = conn.execute("select * from memctx.worker_backlog").fetchall()
    assert [(r["conversation_id"], r["pending"], r["claimed"], r["failing"]) for r in rows] == [(conv_a.id, 3, 0, 0)]
    assert rows[0]["lag"].total_seconds() >= 0
    assert rows[0]["recent_lag_p50_s"] == pytest.approx(2.0)


def test_token_savings_come_from_the_log_and_only_the_users_own(database_url, two_users, app):
    (a, (conv_a, stored_a)), (b, (conv_b, _)) = two_users.items()
    history = sum(m.token_count + STORED_MESSAGE_OVERHEAD for m in stored_a)
    with as_user(database_url, a) as conn:  # the API logs as the caller: authenticated may insert
        first = _log(conn, a, conv_a.id, used=30)
        _log(conn, a, conv_a.id, used=10, kind="proxy")
        conn.commit()
    assert first.full_history_tokens == 20 + history
    with as_user(database_url, b) as conn:
        _log(conn, b, conv_b.id, used=5)
        conn.commit()
        assert [r["user_id"] for r in conn.execute("select user_id from memctx.context_requests")] == [b]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # not into another user's conversation
            _log(conn, b, conv_a.id, used=5)
    for page in ("README.md", "docs/DASHBOARDS.md"):  # both show the query this test runs
        assert SAVINGS_QUERY.read_text().strip() in (ROOT / page).read_text(), page
    with as_user(database_url, a) as conn:
        rows = {r["kind"]: r for r in conn.execute(SAVINGS_QUERY.read_text())}
    assert set(rows) == {"context", "proxy"}
    assert rows["context"]["requests"] == 1
    assert rows["context"]["tokens_used"] == 30
    assert rows["context"]["tokens_saved"] == 20 + history - 30
    assert rows["proxy"]["tokens_saved"] == 20 + history - 10


def test_a_context_that_cost_more_than_the_history_counts_against_the_savings(database_url, two_users):
    (a, (conv_a, stored_a)), _ = two_users.items()
    history = 20 + sum(m.token_count + STORED_MESSAGE_OVERHEAD for m in stored_a)
    with as_user(database_url, a) as conn:
        over = _log(conn, a, conv_a.id, used=history + 50)  # e.g. memories of the user's other conversations
        under = _log(conn, a, conv_a.id, used=history - 40)
        conn.commit()
        view = conn.execute("select sum(tokens_saved) as saved from memctx.token_savings").fetchone()
    assert (over.tokens_saved, under.tokens_saved) == (-50, 40)
    assert view["saved"] == -10  # not 40: the 50 tokens spent over the history count too


def test_the_log_holds_no_message_text(app, two_users):
    (a, (conv_a, _)), _ = two_users.items()
    wc = get_working_context(app, conv_a.id, "Who brings the banner?", 500, user=a)
    with app.pool.connection() as conn:
        _log(conn, a, conv_a.id, used=wc.tokens)
        log_request(conn, wc.log_entry(app.counter, user_id=a, conversation_id=conv_a.id, kind="context"),
                    retention_days=30)
        columns = [r["column_name"] for r in conn.execute(
            "select column_name from information_schema.columns where table_schema = 'memctx' "
            "and table_name = 'context_requests' order by ordinal_position")]
        logged = json.dumps([list(r.values()) for r in conn.execute("select * from memctx.context_requests")],
                            default=str)
    assert columns == ["id", "user_id", "conversation_id", "kind", "created_at", "model", "token_budget", "tokens_used",
                       "full_history_tokens", "timings_ms", "sources", "upstream_status"]
    assert "banner" not in logged and "Porto" not in logged and "ninth" not in logged
    assert '"current_sql"' in logged  # the stage timings are there (a history that fits needs no search)


def test_retention_prunes_a_users_old_rows_on_their_next_request(app, two_users):
    (a, (conv_a, _)), (b, (conv_b, _)) = two_users.items()
    with app.pool.connection() as conn:
        for user, conv in ((a, conv_a), (b, conv_b)):
            _log(conn, user, conv.id, used=1)
        conn.execute("update memctx.context_requests set created_at = now() - interval '31 days'")
        _log(conn, a, conv_a.id, used=2)
        left = conn.execute("select user_id, tokens_used from memctx.context_requests order by id").fetchall()
    assert [(r["user_id"], r["tokens_used"]) for r in left] == [(b, 1), (a, 2)]


def test_forgetting_a_user_deletes_their_log_and_keys(app, two_users):
    (a, (conv_a, _)), _ = two_users.items()
    with app.pool.connection() as conn:
        _log(conn, a, conv_a.id, used=1)
        conn.execute("insert into memctx.idempotency_keys (user_id, key, conversation_id, request_hash) "
                     "values (%s, 'k', %s, 'h')", (a, conv_a.id))
    deleted = app.store.forget_user(a)
    assert deleted["context_requests"] == 1 and deleted["idempotency_keys"] == 1


def _documented_columns() -> dict[str, list[tuple[str, str]]]:
    """docs/DASHBOARDS.md's column tables: view → [(column, type)], in the page's order."""
    views: dict[str, list[tuple[str, str]]] = {}
    view = None
    for line in (ROOT / "docs" / "DASHBOARDS.md").read_text().splitlines():
        if line.startswith("### `memctx."):
            view = line.strip("#` ").removeprefix("memctx.")
            views[view] = []
        elif view and line.startswith("| `"):
            column, kind = (cell.strip(" `") for cell in line.split("|")[1:3])
            views[view].append((column, kind))
        elif line.startswith("#"):
            view = None
    return views


DASHBOARD_VIEWS = ("conversation_overview", "token_savings", "worker_backlog", "shadow_comparison", "feedback_log",
                   "profile_storage")


def test_every_column_of_the_dashboard_views_is_documented_with_its_type(database_url):
    aliases = {"timestamptz": "timestamp with time zone", "float8": "double precision"}
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("""
            select c.relname, a.attname, format_type(a.atttypid, a.atttypmod)
              from pg_attribute a join pg_class c on c.oid = a.attrelid
              join pg_namespace n on n.oid = c.relnamespace
             where n.nspname = 'memctx' and c.relname = any(%s) and a.attnum > 0 and not a.attisdropped
             order by c.relname, a.attnum""", (list(DASHBOARD_VIEWS),)).fetchall()
    catalog: dict[str, list[tuple[str, str]]] = {}
    for view, column, kind in rows:
        catalog.setdefault(view, []).append((column, kind))
    documented = {view: [(column, aliases.get(kind, kind)) for column, kind in columns]
                  for view, columns in _documented_columns().items()}
    assert set(catalog) == set(DASHBOARD_VIEWS) and documented == catalog
