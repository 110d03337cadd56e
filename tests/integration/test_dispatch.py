"""The dispatcher turns outbox rows into one job per conversation, and nothing is lost or stuck."""

from __future__ import annotations

import dataclasses
import time
import uuid

import dramatiq
import pytest
from psycopg.types.json import Jsonb

from memctx.pipeline import catchup, dispatch, longterm
from memctx.pipeline.board import get_board
from memctx.models import NewMessage
from memctx.store import DEFAULT_USER
from memctx.worker.actors import declare
from memctx.worker.broker import make_broker

USER = DEFAULT_USER


def _say(app, conversation_id, *texts) -> None:
    """Insert messages one statement each, the way a chat app's plain SQL would."""
    with app.pool.connection() as conn:
        for i, text in enumerate(texts):
            m = NewMessage.build("user" if i % 2 == 0 else "assistant", text)
            conn.execute("insert into memctx.messages (conversation_id, role, content, text) values (%s, %s, %s, %s)",
                         (conversation_id, m.role, Jsonb(m.blocks), m.text))
            conn.commit()


def _texts(n, prefix="Turn"):
    return [f"{prefix} {i}: Alice met Bob in Paris on Monday to plan the bakery launch number {i}." for i in range(n)]


def _tuned(app, **changes):
    return dataclasses.replace(app, settings=app.settings.model_copy(update=changes))


def test_rows_inserted_while_no_worker_runs_become_one_job_per_conversation_at_start(app):
    a, b = (app.store.create_conversation(USER) for _ in range(2))
    _say(app, a.id, *_texts(7))
    _say(app, b.id, *_texts(4))
    jobs = []
    dispatcher = dispatch.Dispatcher(app, jobs.append, name="test")

    assert dispatcher.sweep() == 2
    assert sorted(j.conversation_id for j in jobs) == sorted([a.id, b.id])
    assert dispatcher.dispatch_pending() == 0  # claimed rows are not claimed twice within the lease
    assert dispatch.backlog(app).pending == 11

    for job in jobs:
        dispatch.run_job(app, job.user_id, job.conversation_id)
    assert dispatch.backlog(app).pending == 0
    assert [c.level for c in catchup.live_chain(app, USER, a.id)] == [1, 0, 0, 0, 0]
    assert get_board(app, USER, a.id).last_seq == 5


def test_an_expired_claim_is_claimed_again(app):
    conv = app.store.create_conversation(USER)
    _say(app, conv.id, *_texts(2))
    first, second = [], []
    dispatch.Dispatcher(app, first.append, name="dies").dispatch_pending()
    assert len(first) == 1  # ...and that worker dies before running it
    short = _tuned(app, claim_lease_s=0.2)
    time.sleep(0.3)
    dispatch.Dispatcher(short, second.append, name="survivor").dispatch_pending()
    assert [j.conversation_id for j in second] == [conv.id]
    with app.pool.connection() as conn:
        rows = conn.execute("select claimed_by, attempts from memctx.outbox").fetchall()
    assert {r["claimed_by"] for r in rows} == {"survivor"} and {r["attempts"] for r in rows} == {2}


def test_a_failing_job_leaves_its_rows_pending_with_the_error(app):
    conv = app.store.create_conversation(USER)
    _say(app, conv.id, *_texts(6))

    class Broken:
        name = "broken"

        def summarize(self, *a, **k):
            raise RuntimeError("model unavailable")

        def update_board(self, *a, **k):
            raise RuntimeError("model unavailable")

    with pytest.raises(RuntimeError):
        dispatch.run_job(app, USER, conv.id, summarizer=Broken())
    with app.pool.connection() as conn:
        rows = conn.execute("select processed_at, last_error from memctx.outbox").fetchall()
    assert all(r["processed_at"] is None and "model unavailable" in r["last_error"] for r in rows)
    assert catchup.live_chain(app, USER, conv.id)[0].kind == "message"  # the failed step left no trace
    dispatch.run_job(app, USER, conv.id)
    assert dispatch.backlog(app).pending == 0


def test_idle_conversation_gets_its_long_term_summary_from_the_sweep(app):
    conv = app.store.create_conversation(USER, title="launch")
    _say(app, conv.id, *_texts(8), "Could you send me the launch checklist?")
    jobs = []
    idle = _tuned(app, idle_close_minutes=0.001)
    time.sleep(0.1)
    dispatch.Dispatcher(idle, jobs.append).sweep()
    assert [(j.conversation_id, j.close) for j in jobs] == [(conv.id, True)]
    dispatch.run_job(idle, USER, conv.id, close=True)
    summary = longterm.get_conversation_summary(app, USER, conv.id)
    assert summary.last_seq == 9 and summary.summary
    assert dispatch.backlog(app).pending == 0
    jobs.clear()
    dispatch.Dispatcher(idle, jobs.append).sweep()
    assert jobs == []  # nothing new since: not closed again


def test_live_path_with_listen_notify_and_dramatiq_workers(app):
    """Messages inserted by SQL while the dispatcher and Dramatiq worker threads run get summarized."""
    live = _tuned(app, broker="stub", sweep_interval_s=60.0)
    broker = make_broker(live.settings, live.url)
    actors = declare(broker, live)
    worker = dramatiq.Worker(broker, worker_threads=2, worker_timeout=100)
    worker.start()
    dispatcher = dispatch.Dispatcher(live, actors.send)
    thread = dispatcher.start()
    try:
        assert dispatcher.ready.wait(10)
        conv = live.store.create_conversation(USER)
        _say(live, conv.id, *_texts(10))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            board = get_board(live, USER, conv.id)
            if board and board.last_seq == 10 and dispatch.backlog(live).pending == 0:
                break
            time.sleep(0.1)
        assert board is not None and board.last_seq == 10
        chain = catchup.live_chain(live, USER, conv.id)
        assert [(c.level, c.first_seq, c.last_seq) for c in chain] == [
            (1, 1, 3), (1, 4, 6), (0, 7, 7), (0, 8, 8), (0, 9, 9), (0, 10, 10)]
        with live.pool.connection() as conn:
            assert conn.execute("select count(*) as n from memctx.messages where embedding is null").fetchone()["n"] == 0
    finally:
        dispatcher.stop()
        thread.join(5)
        worker.stop()
        broker.close()


def test_request_for_another_users_conversation_is_refused(app):
    conv = app.store.create_conversation(USER)
    assert dispatch.request(app, USER, conv.id, "summarize")
    assert not dispatch.request(app, uuid.uuid4(), conv.id, "close")
    with pytest.raises(ValueError):
        dispatch.request(app, USER, conv.id, "delete")


def test_migration_holds_the_queue_schema_of_the_installed_dramatiq_postgres(app):
    """0003 copies dramatiq-postgres's DDL; an upgrade that changes it must come with a migration."""
    import re
    from pathlib import Path

    from dramatiq_postgres import generate_init_sql

    def statements(text):
        text = re.sub(r"--[^\n]*", "", text)
        return [" ".join(s.split()) for s in text.split(";") if s.strip()]

    ours = Path(__file__).resolve().parents[2] / "migrations" / "0003_worker.sql"
    theirs = statements(generate_init_sql("memctx_queue"))
    assert [s for s in statements(ours.read_text()) if "memctx_queue" in s] == theirs
    with app.pool.connection() as conn:  # and the broker's own existence check agrees
        assert conn.execute("select to_regclass('memctx_queue.queue') is not null as ok").fetchone()["ok"]


def test_metrics_endpoint_reports_summaries_boards_backlog(app):
    import socket

    import httpx

    from memctx import metrics

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = metrics.serve(port, addr="127.0.0.1")
    conv = app.store.create_conversation(USER)
    _say(app, conv.id, *_texts(6))
    dispatch.run_job(app, USER, conv.id)
    dispatch.backlog(app)
    try:
        body = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    finally:
        server.shutdown()
        server.server_close()
    for name in ("memctx_summaries_generated_total{kind=\"level1\",summarizer=\"extractive\"}",
                 "memctx_summary_generation_duration_seconds_bucket", "memctx_summary_token_count_bucket",
                 "memctx_board_updates_total", "memctx_outbox_backlog 0.0", "memctx_worker_messages_embedded_total"):
        assert name in body, name


def test_processed_rows_are_purged_after_the_keep_time_and_pending_ones_never(app):
    conv = app.store.create_conversation(USER)
    _say(app, conv.id, *_texts(3))
    dispatch.run_job(app, USER, conv.id)
    _say(app, conv.id, *_texts(2))  # pending
    purge = _tuned(app, outbox_keep_hours=0.0)
    dispatch.Dispatcher(purge, lambda job: None).sweep()
    with app.pool.connection() as conn:
        left = conn.execute("select seq, processed_at from memctx.outbox order by seq").fetchall()
    assert [r["seq"] for r in left] == [4, 5]


def test_a_summarize_request_forces_the_board_tail_through_the_worker_path(app):
    conv = app.store.create_conversation(USER)
    _say(app, conv.id, *_texts(7))
    jobs = []
    dispatcher = dispatch.Dispatcher(app, jobs.append)
    dispatcher.dispatch_pending()
    dispatch.run_job(app, jobs[0].user_id, jobs[0].conversation_id, force=jobs[0].force)
    assert get_board(app, USER, conv.id).last_seq == 5  # the tail waits for 3 more messages

    assert dispatch.request(app, USER, conv.id, "summarize")
    jobs.clear()
    dispatcher.dispatch_pending()
    assert [(j.conversation_id, j.force) for j in jobs] == [(conv.id, True)]
    dispatch.run_job(app, USER, conv.id, force=True)
    assert get_board(app, USER, conv.id).last_seq == 7
    assert dispatch.backlog(app).pending == 0


def test_the_sweep_embeds_a_batch_of_superseded_summaries_and_reports_the_rest(app):
    from memctx import metrics

    small = _tuned(app, backfill_batch_size=3)
    conv = small.store.create_conversation(USER)
    _say(small, conv.id, *_texts(30))
    dispatch.run_job(small, USER, conv.id)
    before = dispatch.backlog(small).unembedded_summaries
    assert before > 3
    counted = metrics.SUMMARIES_BACKFILLED._value.get()

    dispatch.Dispatcher(small, lambda job: None).sweep()
    after = dispatch.backlog(small)
    assert after.unembedded_summaries == before - 3
    assert metrics.SUMMARIES_UNEMBEDDED._value.get() == before - 3
    assert metrics.SUMMARIES_BACKFILLED._value.get() - counted == 3


def test_an_idle_worker_process_backfills_the_whole_backlog(app):
    idle = _tuned(app, backfill_batch_size=4, backfill_idle_s=0.0, sweep_interval_s=0.2)
    conv = idle.store.create_conversation(USER)
    _say(idle, conv.id, *_texts(30))
    dispatch.run_job(idle, USER, conv.id)
    assert dispatch.backlog(idle).unembedded_summaries > 0
    backfill = dispatch.IdleBackfill(idle)
    thread = backfill.start()
    try:
        deadline = time.monotonic() + 30
        while dispatch.backlog(idle).unembedded_summaries and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        backfill.stop()
        thread.join(5)
    assert dispatch.backlog(idle).unembedded_summaries == 0
