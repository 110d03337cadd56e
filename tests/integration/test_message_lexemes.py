"""Each message's length in lexemes kept in its row (migration 0025): whoever writes the message,
the count is its tsvector's, so the full-text list's BM25 reads it instead of the out-of-line
tsvector and ranks exactly as before; rows stored before the migration (no count) rank the same,
and the idle worker (fill_lexeme_counts) gives them theirs."""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from datetime import datetime, timedelta, timezone

import numpy as np
import psycopg
import pytest

from memctx.models import NewMessage
from memctx.pipeline.dispatch import IdleBackfill
from memctx.retrieve import SearchOptions
from memctx.retrieve.lexical import analyze
from memctx.retrieve.queries import SEARCH_QUERIES
from memctx.retrieve.search import pool_size
from memctx.sql import QUERIES
from memctx.store import fill_lexeme_counts
from memctx.store.ingest import ingest, parse_jsonl
from test_retrieve_scale import WORDS, _centers, _load, _ranked

# the messages of a user whose stored count is not its tsvector's length (a null count included)
WRONG = ("select count(*) filter (where m.lexemes is distinct from length(m.tsv)) as wrong, count(*) as n, "
         "count(*) filter (where m.lexemes > 0) as counted from memctx.messages m where m.user_id = %s")


def _checked(conn, user) -> int:
    row = conn.execute(WRONG, (user,)).fetchone()
    assert row["wrong"] == 0, row
    return row["counted"]


def store_every_way(app, user):
    """Seven messages of `user` written every way memctx and its clients write them: the store's
    append (COPY), as `memctx ingest` and the API write; plain SQL with the text given, with the
    text derived from the content blocks (0005), and with no searchable text. Returns the
    conversation the store and SQL wrote to."""
    conv = app.store.create_conversation(user, external_id="paths")
    app.store.append_messages(user, conv.id, [NewMessage.build("user", "We hiked the Dolomites in June"),
                                              NewMessage.build("assistant", "The jazz concert was loud")], embed=False)
    lines = [{"conversation": "ingested", "role": "user", "content": "Sourdough again, third loaf this week",
              "created_at": "2023-06-03T10:00:00Z"}, {"conversation": "ingested", "role": "assistant", "content": "ok"}]
    ingest(app.store, parse_jsonl("\n".join(json.dumps(x) for x in lines)), user)
    with app.pool.connection() as conn:
        conn.execute("insert into memctx.messages (conversation_id, user_id, role, text) "
                     "values (%s, %s, 'user', 'Kayaking at sunset on the lake')", (conv.id, user))
        conn.execute("insert into memctx.messages (conversation_id, user_id, role, content) values "
                     "(%s, %s, 'user', %s), (%s, %s, 'user', '[]')",
                     (conv.id, user, json.dumps([{"type": "text", "text": "Pottery class"},
                                                 {"type": "image", "caption": "a blue bowl"}]), conv.id, user))
    return conv


def test_every_write_path_stores_the_length_of_the_messages_tsvector(app):
    user = uuid.uuid4()
    conv = store_every_way(app, user)
    with app.pool.connection() as conn:
        assert _checked(conn, user) == 6
        counters = conn.execute("select sum(c.lexeme_count) as counted, (select sum(length(m.tsv)) from "
                                "memctx.messages m where m.user_id = %s) as stored from memctx.conversations c "
                                "where c.user_id = %s", (user, user)).fetchone()
        assert counters["counted"] == counters["stored"] > 0  # 0016's mean length, from the same counts
    with app.for_user(user).pool.connection() as conn:  # a tenant's SQL under RLS
        conn.execute("insert into memctx.messages (conversation_id, user_id, role, text) "
                     "values (%s, %s, 'user', 'written by a client with its own words')", (conv.id, user))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # no column privilege: the count is the database's
            with conn.transaction():
                conn.execute("insert into memctx.messages (conversation_id, user_id, role, text, lexemes) "
                             "values (%s, %s, 'user', 'forged', 1)", (conv.id, user))
    with app.pool.connection() as conn:
        seqs = [r["seq"] for r in conn.execute("select seq from memctx.messages where conversation_id = %s "
                                               "order by seq", (conv.id,))]
        edit = "update memctx.messages set {} where conversation_id = %s and seq = %s"
        conn.execute(edit.format("text = 'said otherwise, much longer than it was before'"), (conv.id, seqs[0]))
        conn.execute(edit.format("content = %s, text = ''"),
                     (json.dumps([{"type": "text", "text": "Bread and butter pudding"}]), conv.id, seqs[1]))
        conn.execute(edit.format("created_at = created_at - interval '40 days'"), (conv.id, seqs[2]))  # its date lexemes
        conn.execute(edit.format("content = '[]', text = ''"), (conv.id, seqs[3]))  # no searchable text left
        message = conn.execute("select id from memctx.messages where conversation_id = %s and seq = %s",
                               (conv.id, seqs[-1])).fetchone()["id"]
        conn.execute(QUERIES["set_message_embedding"], {"id": message, "user_id": user, "token_count": 7,
                                                        "embedding": np.ones(384, dtype=np.float32)})
        conn.execute(edit.format("lexemes = 999"), (conv.id, seqs[4]))  # kept as counted
        conn.execute(edit.format("lexemes = null"), (conv.id, seqs[5]))
        assert _checked(conn, user) == 6  # the two messages without searchable text count 0
    # a bulk import with triggers off (bench/scale.py, a restore of rows): the count is part of the row
    with psycopg.connect(app.url, autocommit=True) as conn:
        conn.execute("set session_replication_role = replica")
        with conn.cursor().copy("copy memctx.messages (conversation_id, user_id, seq, role, text) from stdin") as copy:
            copy.write_row((conv.id, user, 1000, "user", "imported without triggers, counted all the same"))
    with app.pool.connection() as conn:
        assert _checked(conn, user) == 7


def _lexical(app, user, query, opts, since=None, until=None, conversation=None):
    """The bounded plan's full-text ranking (ids in rank order) of one query."""
    analysis = analyze(query, (), None)
    params = {"user_id": user, "conversation_id": conversation, "query_vec": np.zeros(384, dtype=np.float32),
              "tsquery": analysis.tsquery, "terms": list(analysis.terms), "since": since, "until": until,
              "k_dense": 1, "k_lexical": opts.k_lexical, "k_recent": 0, "window": 0, "pair": False, "smooth": opts.smooth,
              "k_pool": pool_size(opts), "k_match": opts.k_match, "k_codes": opts.k_codes, "scope_size": 1800,
              "parallel_workers": 0}
    name = "search_user" if conversation is None else "search_conversation"
    with app.pool.connection() as conn:
        return _ranked(conn.execute(SEARCH_QUERIES[(name, "bounded")], params).fetchall(), "lexical_rank")


def test_rows_without_a_count_rank_the_same_and_fill_lexeme_counts_counts_them(app):
    """Rows stored before 0025 have no count: their full-text ranking reads the tsvector and is
    the same, for a user, a conversation and a time range (whose mean length is read from the
    rows); fill_lexeme_counts then counts them, another user's rows untouched."""
    rng = np.random.default_rng(5)
    centers = _centers(rng)
    user, other = uuid.uuid4(), uuid.uuid4()
    convs = _load(app, user, conversations=3, per=600, rng=rng, centers=centers)
    _load(app, other, conversations=1, per=50, rng=rng, centers=centers)
    opts = SearchOptions(k_lexical=50, smooth=1.0)
    now = datetime.now(timezone.utc)
    queries = [" ".join(rng.choice(WORDS, 4)) for _ in range(8)]
    scopes = [{}, {"conversation": convs[1]}, {"since": now - timedelta(days=1), "until": now + timedelta(days=1)}]

    def rankings():
        return [_lexical(app, user, q, opts, **scope) for q in queries for scope in scopes]

    counted = rankings()
    assert all(len(r) == 50 for r in counted)
    with psycopg.connect(app.url) as conn:  # as a database migrated with these rows in it leaves them
        conn.execute("alter table memctx.messages disable trigger messages_lexemes")
        conn.execute("update memctx.messages set lexemes = null")
        conn.execute("alter table memctx.messages enable always trigger messages_lexemes")
    with app.pool.connection() as conn:
        assert conn.execute("select count(*) as n from memctx.messages where lexemes is not null").fetchone()["n"] == 0
    assert rankings() == counted
    assert fill_lexeme_counts(app.pool) == 1850
    assert fill_lexeme_counts(app.pool) == 0
    with app.pool.connection() as conn:
        assert _checked(conn, user) == 1800 and _checked(conn, other) == 50
    assert rankings() == counted


def test_an_idle_worker_counts_the_rows_stored_before_0025(app):
    """Nobody runs a command: the worker's idle backfill counts the old rows, batch by batch."""
    user = uuid.uuid4()
    conv = app.store.create_conversation(user)
    app.store.append_messages(user, conv.id, [NewMessage.build("user", f"turn {i} about gardens and tomatoes") for i in range(30)])
    with psycopg.connect(app.url) as conn:  # as a database migrated with these rows in it leaves them
        conn.execute("alter table memctx.messages disable trigger messages_lexemes")
        conn.execute("update memctx.messages set lexemes = null")
        conn.execute("alter table memctx.messages enable always trigger messages_lexemes")
    idle = dataclasses.replace(app, settings=app.settings.model_copy(update={"backfill_idle_s": 0.0,
                                                                             "sweep_interval_s": 0.2}))
    backfill = IdleBackfill(idle)
    thread = backfill.start()
    try:
        deadline = time.monotonic() + 30
        while _missing(app) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        backfill.stop()
        thread.join(5)
    assert _missing(app) == 0
    with app.pool.connection() as conn:
        assert _checked(conn, user) == 30


def _missing(app) -> int:
    with app.pool.connection() as conn:
        return conn.execute("select count(*) as n from memctx.messages where lexemes is null").fetchone()["n"]
