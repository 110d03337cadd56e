"""The hierarchy in the database matches the pure rules, whatever the arrival pattern."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st
from psycopg.types.json import Jsonb

from memctx import providers
from memctx.pipeline import catchup, embedding
from memctx.pipeline.board import get_board
from memctx.store import DEFAULT_USER, UnknownConversation
from memctx.store.ingest import load_file
from memctx.summarize.chain import expected_chain
from support import Verbose, run_concurrently, seen_state

USER = DEFAULT_USER


def _sql_insert(app, conversation_id, messages) -> None:
    """Insert messages the way any client would: plain SQL, no embedding, no token count."""
    with app.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
        cur.executemany(
            "insert into memctx.messages (conversation_id, role, content, text, created_at, metadata) "
            "values (%s, %s, %s, %s, coalesce(%s, now()), %s)",
            [(conversation_id, m.role, Jsonb(m.blocks), m.text, m.created_at, Jsonb(m.metadata)) for m in messages])


def _locomo(locomo_path: Path, index: int = 0):
    return load_file(locomo_path, "locomo")[index].messages


def _shape(chain):
    return [(c.level, c.is_master, c.first_seq, c.last_seq) for c in chain]


def _expected_shape(n, app):
    return [(e.level, e.is_master, e.first_seq, e.last_seq)
            for e in expected_chain(n, catchup.chain_params(app.settings))]


def _full_state(app, conversation_id):
    """Everything a user sees of the chain and board (ids excluded)."""
    return seen_state(app, USER, conversation_id)


def test_catch_up_builds_the_expected_chain_with_sources_ranges_tokens_embeddings(app, locomo_path):
    messages = _locomo(locomo_path)[:100]
    conv = app.store.create_conversation(USER, title="chain")
    _sql_insert(app, conv.id, messages)

    result = catchup.catch_up(app, USER, conv.id)

    assert result.embedded_messages == 100
    chain = catchup.live_chain(app, USER, conv.id)
    assert _shape(chain) == _expected_shape(100, app)
    assert result.summaries_written > 0 and result.board_updates == 20
    with app.pool.connection() as conn:
        rows = conn.execute("select * from memctx.summaries where conversation_id = %s", (conv.id,)).fetchall()
        unembedded = conn.execute("select count(*) as n from memctx.messages where conversation_id = %s "
                                  "and (embedding is null or token_count is null)", (conv.id,)).fetchone()["n"]
    assert unembedded == 0
    assert all(r["token_count"] and r["token_count"] <= app.settings.summary_length for r in rows)
    # Memory search reads live summaries: those are embedded by the catch-up itself.
    assert all(r["embedding"] is not None for r in rows if r["superseded_at"] is None)
    # Direct sources: a level-1 summary's sources are its messages, in order; no source is reused.
    all_sources = [s for r in rows for s in r["source_ids"]]
    assert len(all_sources) == len(set(all_sources))
    msg_seq = {m.id: m.seq for m in app.store.list_messages(USER, conv.id)}
    for r in rows:
        if r["source_kind"] == "message":
            assert [msg_seq[s] for s in r["source_ids"]] == list(range(r["first_seq"], r["last_seq"] + 1))
    # The superseded summaries point at what replaced them.
    by_id = {r["id"]: r for r in rows}
    for r in rows:
        if r["superseded_at"] is not None:
            assert r["id"] in by_id[r["superseded_by"]]["source_ids"]


def test_every_message_is_covered_by_exactly_one_live_element(app, locomo_path):
    conv = app.store.create_conversation(USER)
    _sql_insert(app, conv.id, _locomo(locomo_path)[:250])
    catchup.catch_up(app, USER, conv.id)
    chain = catchup.live_chain(app, USER, conv.id)
    covered = [seq for c in chain for seq in range(c.first_seq, c.last_seq + 1)]
    assert sorted(covered) == list(range(1, 251))
    assert chain[0].is_master and sum(c.is_master for c in chain) == 1


def _summaries_and_what_they_cover(app, conversation_id):
    """Every summary (live and superseded) with its own tokens, its direct sources' tokens and the
    raw turns' tokens of its seq range."""
    with app.pool.connection() as conn:
        return conn.execute("""
            select s.id, s.level, s.is_master, s.token_count, s.content,
                   (select coalesce(sum(m.token_count), 0) from memctx.messages m where m.id = any(s.source_ids))
                 + (select coalesce(sum(x.token_count), 0) from memctx.summaries x where x.id = any(s.source_ids))
                   as source_tokens,
                   (select sum(m.token_count) from memctx.messages m
                     where m.conversation_id = s.conversation_id and m.seq between s.first_seq and s.last_seq)
                   as covered_tokens
              from memctx.summaries s where s.conversation_id = %s""", (conversation_id,)).fetchall()


def test_no_summary_is_longer_than_what_it_summarizes(app, locomo_path):
    conv = app.store.create_conversation(USER)
    _sql_insert(app, conv.id, _locomo(locomo_path)[:250])
    catchup.catch_up(app, USER, conv.id)
    rows = _summaries_and_what_they_cover(app, conv.id)
    assert len(rows) > 20
    for r in rows:
        assert r["token_count"] == app.counter.count(r["content"])
        assert r["token_count"] <= r["covered_tokens"] // 2, r
        if not r["is_master"]:  # a master also folds its previous text, which is not a source row
            assert r["token_count"] <= r["source_tokens"], r
    # a summary of summaries may take half of the turns it stands for, not half of its sources:
    # some level-2 summaries keep more than half of theirs
    assert any(r["level"] == 2 and r["token_count"] > r["source_tokens"] // 2 for r in rows)


def test_a_summarizer_that_overshoots_is_cut_to_under_its_sources(app, locomo_path):
    conv = app.store.create_conversation(USER)
    _sql_insert(app, conv.id, _locomo(locomo_path)[:60])
    catchup.catch_up(app, USER, conv.id, Verbose(providers.make_summarizer(app.settings, app.counter)))
    rows = _summaries_and_what_they_cover(app, conv.id)
    assert rows and all(r["token_count"] <= r["covered_tokens"] // 2 for r in rows)
    assert all(r["token_count"] == app.counter.count(r["content"]) for r in rows)


def test_catch_up_is_idempotent_and_a_second_run_writes_nothing(app, locomo_path):
    conv = app.store.create_conversation(USER)
    _sql_insert(app, conv.id, _locomo(locomo_path)[:40])
    catchup.catch_up(app, USER, conv.id)
    before = _full_state(app, conv.id)
    again = catchup.catch_up(app, USER, conv.id)
    assert again.summaries_written == 0 and again.board_updates == 0 and again.embedded_messages == 0
    assert _full_state(app, conv.id) == before


@hsettings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.integers(min_value=1, max_value=17), min_size=1, max_size=8),
       params=st.tuples(st.integers(2, 7), st.integers(1, 6), st.integers(2, 4), st.integers(1, 3)))
def test_any_arrival_pattern_gives_the_chain_of_one_message_at_a_time(app, locomo_path, batches, params):
    n_sum, sum_window, n_sum_sum, max_sum_lvl = params
    sum_window = min(sum_window, n_sum - 1)
    settings = app.settings.model_copy(update={"n_sum": n_sum, "sum_window": sum_window, "n_sum_sum": n_sum_sum,
                                               "max_sum_lvl": max_sum_lvl, "summary_length": 60,
                                               "board_update_frequency": 4})
    tuned = dataclasses.replace(app, settings=settings)
    messages = _locomo(locomo_path)[: sum(batches)]
    batched = tuned.store.create_conversation(USER)
    at_once = tuned.store.create_conversation(USER)
    start = 0
    for size in batches:
        _sql_insert(tuned, batched.id, messages[start:start + size])
        start += size
        catchup.catch_up(tuned, USER, batched.id)
    _sql_insert(tuned, at_once.id, messages)
    catchup.catch_up(tuned, USER, at_once.id)

    assert _shape(catchup.live_chain(tuned, USER, batched.id)) == _expected_shape(len(messages), tuned)
    # Same content too: the steps are deterministic given their sources.
    assert _full_state(tuned, batched.id) == _full_state(tuned, at_once.id)


def test_board_updates_every_update_frequency_messages_and_keeps_constraints(app):
    conv = app.store.create_conversation(USER)
    from memctx.models import NewMessage
    texts = ["Please always answer in French from now on.", "Bien sûr, je répondrai en français.",
             "My sister Anna lives in Lyon and works at Airbus.", "That sounds great.",
             "Can you remind me to call the dentist on Friday?", "Sure, I noted it.", "What time is it in Lyon?"]
    msgs = [NewMessage.build("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)]
    _sql_insert(app, conv.id, msgs)
    result = catchup.catch_up(app, USER, conv.id)
    assert result.board_updates == 1
    board = get_board(app, USER, conv.id)
    assert board.last_seq == 5 and board.message_count == 5
    assert any("French" in c for c in board.constraints)
    forced = catchup.catch_up(app, USER, conv.id, force_board=True)
    assert forced.board_updates == 1
    board = get_board(app, USER, conv.id)
    assert board.last_seq == 7 and any("French" in c for c in board.constraints)


def test_edit_keeps_text_until_forced_regeneration(app, locomo_path):
    conv = app.store.create_conversation(USER)
    _sql_insert(app, conv.id, _locomo(locomo_path)[:12])
    catchup.catch_up(app, USER, conv.id)
    target = next(c for c in catchup.live_chain(app, USER, conv.id) if c.kind == "summary")
    edited = catchup.edit_summary(app, USER, target.id, "Caroline prefers to be called Caro.")
    assert edited.edited and edited.token_count == app.counter.count("Caroline prefers to be called Caro.")
    catchup.catch_up(app, USER, conv.id)
    assert any(c.text == "Caroline prefers to be called Caro." for c in catchup.live_chain(app, USER, conv.id))
    with app.pool.connection() as conn:
        row = conn.execute("select edited, embedding is not null as e from memctx.summaries where id = %s",
                           (target.id,)).fetchone()
    assert row["edited"] and row["e"]

    catchup.regenerate(app, USER, conv.id)
    chain = catchup.live_chain(app, USER, conv.id)
    assert all(c.text != "Caroline prefers to be called Caro." for c in chain)
    assert _shape(chain) == _expected_shape(12, app)


def test_another_users_conversation_is_unknown(app):
    conv = app.store.create_conversation(USER)
    import uuid
    with pytest.raises(UnknownConversation):
        catchup.catch_up(app, uuid.uuid4(), conv.id)
    with pytest.raises(LookupError):
        catchup.edit_summary(app, uuid.uuid4(), uuid.uuid4(), "x")


def test_llm_outage_falls_back_to_extractive_and_is_counted(app):
    """An unreachable LLM endpoint must not stop summarization (the chain still reaches its fixed point)."""
    import socket

    from pydantic import SecretStr

    from memctx import metrics
    from memctx.models import NewMessage

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = app.settings.model_copy(update={"summarizer": "llm", "llm_base_url": f"http://127.0.0.1:{port}/v1",
                                               "llm_api_key": SecretStr("test"), "llm_max_retries": 0, "llm_timeout_s": 2})
    tuned = dataclasses.replace(app, settings=settings)
    summarizer = providers.make_summarizer(settings, app.counter)
    before = sum(s.value for m in metrics.FAILURES.collect() for s in m.samples if s.name.endswith("_total"))
    conv = app.store.create_conversation(USER)
    _sql_insert(app, conv.id, [NewMessage.build("user", f"Message {i} about the Lisbon trip in May.") for i in range(6)])
    result = catchup.catch_up(tuned, USER, conv.id, summarizer)
    after = sum(s.value for m in metrics.FAILURES.collect() for s in m.samples if s.name.endswith("_total"))
    assert result.summaries_written == 1 and result.board_updates == 1
    assert after > before
    with app.pool.connection() as conn:
        row = conn.execute("select summarizer, content from memctx.summaries").fetchone()
    assert "Lisbon" in row["content"]


def test_concurrent_catch_ups_of_one_conversation_do_the_work_once(app, locomo_path):
    conv = app.store.create_conversation(USER)
    _sql_insert(app, conv.id, _locomo(locomo_path)[:60])
    results = run_concurrently(lambda: catchup.catch_up(app, USER, conv.id))
    assert sum(r.embedded_messages for r in results) == 60
    assert sum(r.summaries_written for r in results) == len([a for a in _actions(60, app)])
    assert _shape(catchup.live_chain(app, USER, conv.id)) == _expected_shape(60, app)


def _actions(n, app):
    from memctx.summarize.chain import simulate
    return simulate(n, catchup.chain_params(app.settings)).actions


def _summary_rows(app, conversation_id):
    with app.pool.connection() as conn:
        return conn.execute("select id, embedding is not null as embedded, token_count, superseded_at "
                            "from memctx.summaries where conversation_id = %s", (conversation_id,)).fetchall()


def test_catch_up_embeds_the_live_summaries_and_the_backfill_the_superseded_ones(app, locomo_path):
    from memctx import metrics

    conv = app.store.create_conversation(USER)
    _sql_insert(app, conv.id, _locomo(locomo_path)[:120])
    result = catchup.catch_up(app, USER, conv.id)
    rows = _summary_rows(app, conv.id)
    live = [r for r in rows if r["superseded_at"] is None]
    superseded = [r for r in rows if r["superseded_at"] is not None]
    assert live and all(r["embedded"] for r in live)
    assert superseded and not any(r["embedded"] for r in superseded)  # left for the backfill
    assert result.embedded_summaries == len(live)

    before = metrics.SUMMARIES_BACKFILLED._value.get()
    done = embedding.backfill_conversation(app, USER, conv.id)
    rows = _summary_rows(app, conv.id)
    assert done == len(superseded)
    assert all(r["embedded"] and r["token_count"] for r in rows)
    assert metrics.SUMMARIES_BACKFILLED._value.get() - before == done
    assert embedding.backfill_summary_embeddings(app) == 0  # nothing left anywhere


def test_eager_setting_embeds_every_summary_in_the_catch_up(app, locomo_path):
    eager = dataclasses.replace(app, settings=app.settings.model_copy(update={"summary_embeddings": "all"}))
    conv = eager.store.create_conversation(USER)
    _sql_insert(eager, conv.id, _locomo(locomo_path)[:60])
    catchup.catch_up(eager, USER, conv.id)
    assert all(r["embedded"] for r in _summary_rows(eager, conv.id))
    assert embedding.backfill_summary_embeddings(eager) == 0


def test_concurrent_backfills_never_embed_the_same_summary_twice(app, locomo_path):

    class Slow:  # the real model, slowed so that the backfills overlap
        name, dim = app.embedder.name, app.embedder.dim

        def embed(self, texts):
            time.sleep(0.05)
            return app.embedder.embed(texts)

    slow = dataclasses.replace(app, embedder=Slow(),
                               settings=app.settings.model_copy(update={"backfill_batch_size": 4}))
    convs = [slow.store.create_conversation(USER) for _ in range(2)]
    for i, conv in enumerate(convs):
        _sql_insert(slow, conv.id, _locomo(locomo_path, i)[:80])
        catchup.catch_up(slow, USER, conv.id)
    pending = sum(not r["embedded"] for conv in convs for r in _summary_rows(slow, conv.id))
    assert pending > 8
    def backfill():
        done, idle = 0, 0
        while idle < 3:  # a 0 may mean "the other one holds every candidate": look again
            n = embedding.backfill_summary_embeddings(slow)
            done += n
            idle = idle + 1 if n == 0 else 0
            time.sleep(0.01 if n else 0.1)
        return done

    done = run_concurrently(backfill)
    assert sum(done) == pending  # each row embedded by exactly one backfill
    assert all(r["embedded"] for conv in convs for r in _summary_rows(slow, conv.id))
    with app.pool.connection() as conn:  # every row lock was given back
        assert conn.execute("select count(*) as n from pg_locks where locktype = 'advisory'").fetchone()["n"] == 0
