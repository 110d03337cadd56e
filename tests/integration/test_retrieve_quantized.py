"""User-wide search past the exact scan from the embeddings' sign bits (migration 0023): a
message's code is written with it, whoever writes it, and goes with it; the plan reads the codes
through the index memctx creates itself, and its dense list matches the exact scan's."""

from __future__ import annotations

import uuid

import numpy as np
import psycopg
import pytest

from memctx.models import NewMessage
from memctx.retrieve import MemorySearch, SearchOptions
from memctx.retrieve.queries import SEARCH_QUERIES
from memctx.retrieve.search import choose_plan, pool_size
from memctx.sql import QUERIES
from test_retrieve_scale import TOPICS, _centers, _load, _ranked

NOISE = 0.07


def _query(rng, centers):
    vec = centers[rng.integers(0, TOPICS)] + 0.1 * rng.standard_normal(centers.shape[1])
    return (vec / np.linalg.norm(vec)).astype(np.float32)

CODES = ("select m.seq, c.bits::text as bits, binary_quantize(m.embedding)::text as expected "
         "from memctx.messages m left join memctx.message_codes c on c.message_id = m.id and c.user_id = m.user_id "
         "where m.conversation_id = %s order by m.seq")


def _params(user, vec, opts: SearchOptions, scope_size: int):
    return {"user_id": user, "conversation_id": None, "query_vec": vec, "tsquery": "", "terms": [], "since": None,
            "until": None, "k_dense": opts.k_dense, "k_lexical": opts.k_lexical, "k_recent": 0, "window": 0, "pair": False,
            "smooth": opts.smooth, "k_pool": pool_size(opts), "k_match": opts.k_match,
            "k_codes": max(opts.k_codes, pool_size(opts)), "scope_size": scope_size, "parallel_workers": 0}


@pytest.fixture
def loaded(app):
    rng = np.random.default_rng(29)
    centers = _centers(rng)
    user = uuid.uuid4()
    # turns of one topic at cosine ~0.37 from each other, as related turns embed (test_retrieve_scale's
    # 0.35 makes every cosine ~0.04: noise that no pool could rank as the exact scan does)
    convs = _load(app, user, conversations=3, per=600, rng=rng, centers=centers, noise=NOISE)
    _load(app, uuid.uuid4(), conversations=1, per=900, rng=rng, centers=centers, noise=NOISE)  # another user's rows
    with psycopg.connect(app.url, autocommit=True) as conn:  # as autovacuum leaves them
        conn.execute("vacuum analyze memctx.messages, memctx.message_codes")
    return user, convs, centers, rng


def test_a_user_past_the_exact_scan_takes_the_quantized_pool_where_it_reads_least():
    """Users whose HNSW plan would visit too many other users' rows, or whose exact scan reads
    more than the codes and their rescoring, take the quantized pool; no operator step."""
    opts = SearchOptions()

    def plan(scope, table, **kw):
        return choose_plan(scope, table, kw.pop("opts", opts), matches_indexed=True, **kw)

    assert plan(100_000, 10_000_000, user_wide=True) == "quantized"  # 1 %: was the exact scan of 100k
    assert plan(100_000, 10_000_000) == "bounded"  # one conversation of that size keeps it
    assert plan(8_000, 1_000_000, user_wide=True) == "quantized"  # was the exact scan of 8,000 rows
    assert plan(2_500, 1_000_000, user_wide=True) == "bounded"  # 1,000 rescorings cost more than 2,500 rows
    assert plan(1_500, 1_000_000, user_wide=True) == "bounded"  # within the exact scan
    assert plan(100_000, 1_000_000, user_wide=True) == "quantized"  # 10 %: HNSW would visit ~3,000 tuples
    assert plan(100_000, 200_000, user_wide=True) == "index"  # half the table: ~600
    assert plan(100_000, 10_000_000, user_wide=True, opts=SearchOptions(k_codes=0)) == "bounded"  # 0: off


def test_the_append_path_writes_each_message_code_and_updates_keep_it_in_step(app):
    user = uuid.uuid4()
    conv = app.store.create_conversation(user, external_id="codes")
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((3, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    app.store.append_messages(user, conv.id, [NewMessage.build("user", f"turn {i}") for i in range(3)], embeddings=vecs)
    with app.pool.connection() as conn:
        conn.execute("insert into memctx.messages (conversation_id, user_id, role, text) "
                     "values (%s, %s, 'assistant', 'not embedded yet')", (conv.id, user))
        rows = conn.execute(CODES, (conv.id,)).fetchall()
        assert [r["bits"] for r in rows[:3]] == ["".join("1" if x > 0 else "0" for x in v) for v in vecs]
        assert rows[3]["bits"] is None and rows[3]["expected"] is None
        # the worker's embedding update gives the late message its code; a new vector a new code;
        # a new text drops the embedding (0005) and the code with it
        conn.execute(QUERIES["set_message_embedding"], {"id": _id(conn, conv.id, rows[3]["seq"]), "user_id": user,
                                                        "embedding": -vecs[0], "token_count": 4})
        conn.execute("update memctx.messages set embedding = %s where conversation_id = %s and seq = %s",
                     (vecs[1], conv.id, rows[0]["seq"]))
        conn.execute("update memctx.messages set text = 'said otherwise' where conversation_id = %s and seq = %s",
                     (conv.id, rows[2]["seq"]))
        rows = conn.execute(CODES, (conv.id,)).fetchall()
    assert all(r["bits"] == r["expected"] for r in rows)
    assert rows[3]["bits"] == "".join("1" if x < 0 else "0" for x in vecs[0])
    assert rows[0]["bits"] == rows[1]["bits"] is not None
    assert rows[2]["bits"] is None


def _id(conn, conversation, seq):
    return conn.execute("select id from memctx.messages where conversation_id = %s and seq = %s",
                        (conversation, seq)).fetchone()["id"]


def test_a_tenant_sql_insert_gets_codes_it_can_read_but_not_write_and_forget_user_takes_them(app):
    """A client writing through the Supabase roles (RLS) stores its vector; the code comes from the
    database, only its owner reads it, writing one directly is refused, forget_user deletes it."""
    user = uuid.uuid4()
    conv = app.store.create_conversation(user, external_id="sql")
    vec = np.linspace(-1, 1, 384).astype(np.float32)
    with app.for_user(user).pool.connection() as conn:
        conn.execute("insert into memctx.messages (conversation_id, user_id, role, text, embedding) "
                     "values (%s, %s, 'user', 'written by a client', %s)", (conv.id, user, vec))
        stored = conn.execute(CODES, (conv.id,)).fetchall()
    assert stored[0]["bits"] == stored[0]["expected"] == "0" * 192 + "1" * 192
    with app.for_user(uuid.uuid4()).pool.connection() as conn:
        assert conn.execute("select count(*) as n from memctx.message_codes").fetchone()["n"] == 0
    for forged in ("update memctx.message_codes set bits = %s::varbit",
                   "insert into memctx.message_codes select message_id, user_id, conversation_id, created_at, "
                   "%s::varbit from memctx.message_codes"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            with app.for_user(user).pool.connection() as conn:
                conn.execute(forged, ("1" * 384,))
    with app.for_user(user).pool.connection() as conn:  # the tenant's own delete takes the code along
        conn.execute("insert into memctx.messages (conversation_id, user_id, role, text, embedding) "
                     "values (%s, %s, 'user', 'deleted later', %s)", (conv.id, user, vec))
        conn.execute("delete from memctx.messages where text = 'deleted later'")
        assert conn.execute("select count(*) as n from memctx.message_codes").fetchone()["n"] == 1
    assert app.store.forget_user(user)["messages"] == 1
    with app.pool.connection() as conn:
        assert conn.execute("select count(*) as n from memctx.message_codes where user_id = %s",
                            (user,)).fetchone()["n"] == 0


def test_the_plan_reads_codes_through_the_index_memctx_creates(app, loaded):
    """An index-only scan of message_codes_user_idx: no index per user, no other user's row."""
    user, convs, centers, rng = loaded
    opts = SearchOptions(k_dense=50, k_pool=150, k_codes=300, smooth=1.0)
    with app.pool.connection() as conn:
        conn.execute("set enable_seqscan = off")  # a 3,600-row table: the planner would rather read it all
        plan = "\n".join(r["QUERY PLAN"] for r in conn.execute(
            "explain (analyze, costs off, timing off, summary off) " + SEARCH_QUERIES[("search_user", "quantized")],
            _params(user, _query(rng, centers), opts, 1800)))
    assert "Index Only Scan using message_codes_user_idx" in plan, plan
    assert "hnsw" not in plan, plan


def test_quantized_plan_recall_at_50_against_the_exact_scan(app, loaded):
    """Dense recall@50 of the quantized pool (codes of 300 of the user's 1,800 turns, rescored,
    pool of 150 with neighbours) against the exact plan's list, smoothed and not."""
    user, convs, centers, rng = loaded
    recalls = {}
    for smooth in (0.0, 1.0):
        opts = SearchOptions(k_dense=50, k_pool=150, k_codes=300, k_lexical=1, smooth=smooth)
        for _ in range(20):
            vec = _query(rng, centers)
            lists = {}
            for plan in ("exact", "quantized"):
                with app.pool.connection() as conn:
                    rows = conn.execute(SEARCH_QUERIES[("search_user", plan)], _params(user, vec, opts, 1800)).fetchall()
                lists[plan] = _ranked(rows, "dense_rank")
            assert len(lists["exact"]) == len(lists["quantized"]) == 50
            recalls.setdefault(smooth, []).append(len(set(lists["exact"]) & set(lists["quantized"])) / 50)
    means = {smooth: float(np.mean(r)) for smooth, r in recalls.items()}
    assert all(m >= 0.95 for m in means.values()), (means, recalls)


def test_a_bulk_import_without_triggers_gets_its_codes_from_fill_message_codes(app, loaded):
    """Rows written with triggers off have no code, so the quantized pool cannot find them until
    the import runs fill_message_codes (as bench/scale.py does after its load)."""
    user, convs, centers, rng = loaded
    vec = _query(rng, centers)
    opts = SearchOptions(k_dense=50, k_pool=150, k_codes=150, exact_limit=100, threshold=-1.0, smooth=0.0)
    assert choose_plan(1801, 3601, opts, matches_indexed=True, user_wide=True) == "quantized"
    with app.pool.connection() as conn:
        conn.execute("set session_replication_role = replica")
        conn.execute("insert into memctx.messages (conversation_id, user_id, seq, role, text, embedding) "
                     "values (%s, %s, 10000, 'user', 'imported', %s)", (convs[0], user, vec))
    search = MemorySearch(app.pool, app.embedder, opts)
    assert "imported" not in [f.text for m in search.search(user, "zzzz", None, limit=5, query_vec=vec) for f in m.fragments]
    with app.pool.connection() as conn:
        assert conn.execute(QUERIES["fill_message_codes"]).rowcount == 1
    found = search.search(user, "zzzz", None, limit=5, query_vec=vec)
    assert found[0].fragments[0].text == "imported" and found[0].similarity == pytest.approx(1.0, abs=1e-5)


def test_search_through_the_quantized_plan_for_the_owner_and_a_tenant(app, loaded):
    """Through MemorySearch: the owner's pool and a tenant's (RLS) find the same memories; a
    stranger none."""
    user, convs, centers, rng = loaded
    opts = SearchOptions(k_dense=40, k_pool=120, k_codes=120, k_lexical=40, threshold=-1.0, exact_limit=100, smooth=1.0)
    assert choose_plan(1800, 3600, opts, matches_indexed=True, user_wide=True) == "quantized"
    vec = _query(rng, centers)
    owner = MemorySearch(app.pool, app.embedder, opts).search(user, "jazz kayak", None, limit=30, query_vec=vec)
    caller = MemorySearch(app.for_user(user).pool, app.embedder, opts).search(user, "jazz kayak", None, limit=30,
                                                                              query_vec=vec)
    assert len(owner) == 30 and [m.id for m in caller] == [m.id for m in owner]
    assert MemorySearch(app.for_user(uuid.uuid4()).pool, app.embedder, opts).search(
        user, "jazz kayak", None, limit=30, query_vec=vec) == []
