"""A heavy user's own HNSW index (memctx/pipeline/user_index.py): the worker builds it when the
user reaches the threshold, searches take it by themselves, and it goes when its user does.
No operator step, and no superuser: the owner of memctx.messages builds it."""

from __future__ import annotations

import threading
import time
import uuid

import numpy as np
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memctx.app import open_app
from memctx.pipeline import user_index
from memctx.retrieve import MemorySearch, SearchOptions
from memctx.retrieve.queries import SEARCH_QUERIES
from memctx.retrieve import search as search_module
from memctx.retrieve.search import choose_plan
from memctx.sql import QUERIES
from test_retrieve_quantized import NOISE, _params, _query
from test_retrieve_scale import _centers, _load, _ranked

THRESHOLD = 1000


@pytest.fixture
def heavy(app, settings, embedder):
    """A user of 1,800 messages and another of 600, with the threshold at 1,000."""
    rng = np.random.default_rng(41)
    centers = _centers(rng)
    user, other = uuid.uuid4(), uuid.uuid4()
    _load(app, user, conversations=3, per=600, rng=rng, centers=centers, noise=NOISE)
    _load(app, other, conversations=1, per=600, rng=rng, centers=centers, noise=NOISE)
    with psycopg.connect(app.url, autocommit=True) as conn:
        conn.execute("vacuum analyze memctx.messages")
    with open_app(settings.model_copy(update={"user_index_min_messages": THRESHOLD, "sweep_interval_s": 0.2}),
                  embedder=embedder) as worker_app:
        yield worker_app, user, other, centers, rng


def _indexes(conn) -> dict[str, bool]:
    return {r["name"]: r["valid"] for r in conn.execute(
        "select c.relname as name, i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid "
        "where i.indrelid = 'memctx.messages'::regclass and c.relname like 'messages_hnsw_user_%'")}


def _own_index(conn, user) -> bool:
    return conn.execute(QUERIES["search_plan_inputs"], {"user_id": user, "conversation_id": None}).fetchone()["own_index"]


def test_a_user_at_the_threshold_gets_an_index_of_their_own_and_searches_take_it(heavy):
    worker_app, user, other, centers, rng = heavy
    with worker_app.pool.connection() as conn:
        assert not _own_index(conn, user)
    changes = user_index.maintain(worker_app)
    assert changes.built == [user] and changes.dropped == [] and changes.seconds > 0
    with worker_app.pool.connection() as conn:
        assert _indexes(conn) == {user_index.index_name(user): True}
        definition = conn.execute("select pg_get_indexdef(%s::regclass) as d",
                                  (f"memctx.{user_index.index_name(user)}",)).fetchone()["d"]
        assert _own_index(conn, user) and not _own_index(conn, other)
    # the table-wide index's definition, restricted to the user
    assert "USING hnsw (embedding vector_cosine_ops) WITH (m='16', ef_construction='64')" in definition
    assert definition.endswith(f"WHERE (user_id = '{user}'::uuid)")
    assert user_index.maintain(worker_app).built == []  # nothing more to do

    # the plan: the index plan for the user's memory (not for a time range, nor for the other user)
    opts = SearchOptions(k_dense=50, k_pool=150, exact_limit=100)
    for table in (40_000, 10_000_000):  # half the table or 0.2 % of it: the pool's visits alone
        assert choose_plan(20_000, table, opts, matches_indexed=True, user_wide=True, own_index=True) == "index"
    assert choose_plan(20_000, 10_000_000, opts, matches_indexed=True, user_wide=True) == "quantized"
    assert choose_plan(20_000, 10_000_000, opts, matches_indexed=True, user_wide=True, own_index=True,
                       ranged=True) == "quantized"
    assert choose_plan(20_000, 10_000_000, opts, matches_indexed=True, own_index=True) == "bounded"  # a conversation
    vec = _query(rng, centers)
    params = {**_params(user, vec, opts, 1800), "ef_search": 150, "max_scan_tuples": 20000}
    with worker_app.pool.connection() as conn:
        conn.execute(QUERIES["search_hnsw_settings"], params)
        # a 2,400-row table: the planner would rather read the user's rows and sort them; among the
        # index scans that give the order, it takes the user's (the 1M database took it unprompted)
        conn.execute("set enable_seqscan = off; set enable_bitmapscan = off; set enable_sort = off")
        plan = "\n".join(r["QUERY PLAN"] for r in conn.execute(
            "explain (costs off) " + SEARCH_QUERIES[("search_user", "index")], params, prepare=False))
    assert f"Index Scan using {user_index.index_name(user)}" in plan, plan

    # and it ranks as the exact scan does
    recalls = []
    for _ in range(10):
        vec = _query(rng, centers)
        lists = {}
        for plan in ("exact", "index"):
            params = {**_params(user, vec, opts, 1800), "ef_search": 150, "max_scan_tuples": 20000}
            with worker_app.pool.connection() as conn, conn.transaction():
                if plan == "index":
                    conn.execute(QUERIES["search_hnsw_settings"], params)
                lists[plan] = _ranked(conn.execute(SEARCH_QUERIES[("search_user", plan)], params,
                                                   prepare=False).fetchall(), "dense_rank")
        assert len(lists["exact"]) == len(lists["index"]) == 50
        recalls.append(len(set(lists["exact"]) & set(lists["index"])) / 50)
    assert np.mean(recalls) >= 0.95, recalls
    # through MemorySearch, for the owner and for the user's own RLS-bound pool alike
    search_opts = SearchOptions(k_dense=40, k_pool=100, k_lexical=40, threshold=-1.0, exact_limit=100)
    assert choose_plan(1800, 2400, search_opts, matches_indexed=True, user_wide=True, own_index=True) == "index"
    owner = MemorySearch(worker_app.pool, worker_app.embedder, search_opts)
    found = owner.search(user, "jazz kayak", None, limit=20, query_vec=vec)
    assert owner._plan_inputs[(user, None)]["own_index"]
    # its dense part is the user's own statement, with the user written in it, on its generic plan
    with open_app(worker_app.settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 1}),
                  embedder=worker_app.embedder) as single:  # one connection: its prepared statements
        alone = MemorySearch(single.pool, single.embedder, search_opts)
        assert [alone.search(user, "jazz kayak", None, limit=20, query_vec=vec) for _ in range(2)] == [found, found]
        with single.pool.connection() as conn:
            plans = conn.execute("select generic_plans, custom_plans from pg_prepared_statements "
                                 "where statement like %s", (f"%user_id = '{user}'::uuid%",)).fetchall()
    assert [(p["generic_plans"], p["custom_plans"]) for p in plans] == [(2, 0)]
    tenant = MemorySearch(worker_app.for_user(user).pool, worker_app.embedder, search_opts)
    assert [m.id for m in tenant.search(user, "jazz kayak", None, limit=20, query_vec=vec)] == [m.id for m in found]
    assert MemorySearch(worker_app.for_user(other).pool, worker_app.embedder, search_opts).search(
        user, "jazz kayak", None, limit=20, query_vec=vec) == []


def test_an_index_goes_when_its_user_shrinks_away_and_a_failed_build_is_redone(heavy):
    worker_app, user, other, centers, rng = heavy
    assert user_index.maintain(worker_app).built == [user]
    name = user_index.index_name(user)
    # a build that failed half way leaves an invalid index: the next pass drops and redoes it
    with worker_app.pool.connection() as conn:
        conn.execute(f"update pg_index set indisvalid = false where indexrelid = 'memctx.{name}'::regclass")
        assert not _own_index(conn, user)
    changes = user_index.maintain(worker_app)
    assert changes.dropped == [name] and changes.built == [user]
    with worker_app.pool.connection() as conn:
        assert _indexes(conn) == {name: True}
    # forget_user takes the user's rows; the next pass takes the index
    worker_app.store.forget_user(user)
    assert user_index.maintain(worker_app).dropped == [name]
    with worker_app.pool.connection() as conn:
        assert _indexes(conn) == {}


def test_threshold_zero_builds_none_and_drops_those_built(heavy, settings, embedder):
    worker_app, user, other, centers, rng = heavy
    user_index.maintain(worker_app)
    with open_app(settings.model_copy(update={"user_index_min_messages": 0}), embedder=embedder) as off:
        changes = user_index.maintain(off)
        assert changes.built == [] and changes.dropped == [user_index.index_name(user)]
        with off.pool.connection() as conn:
            assert _indexes(conn) == {}


def test_one_builder_at_a_time(heavy):
    worker_app, user, other, centers, rng = heavy
    with psycopg.connect(worker_app.url, autocommit=True) as holder:
        holder.execute("select pg_advisory_lock(%s)", (user_index.LOCK_KEY,))
        changes = user_index.maintain(worker_app)
        assert changes.locked_out and changes.built == []
    assert user_index.maintain(worker_app).built == [user]


def test_the_owner_of_messages_builds_it_without_being_a_superuser(heavy, settings, embedder):
    """As on Supabase, where the worker connects as the role that ran the migrations, which owns
    the tables but is no superuser; while another role owns messages, the build is refused and
    nothing is left behind."""
    worker_app, user, other, centers, rng = heavy
    role = f"memctx_owner_{uuid.uuid4().hex[:8]}"
    admin = conninfo_to_dict(worker_app.url)["user"]
    with psycopg.connect(worker_app.url, autocommit=True) as conn:
        conn.execute(f"create role {role} login nosuperuser password 'owner'")
        conn.execute(f"grant usage, create on schema memctx to {role}")  # as the schema's owner may
        conn.execute(f"alter table memctx.conversations owner to {role}")  # its sizes, past RLS as owners are
    role_url = make_conninfo(worker_app.url, user=role, password="owner")
    as_role = _AppView(role_url, settings.model_copy(update={"database_url": role_url,
                                                             "user_index_min_messages": THRESHOLD}))
    try:
        assert user_index.maintain(as_role).built == []  # not the owner of messages: refused
        with worker_app.pool.connection() as conn:
            assert _indexes(conn) == {}
            conn.execute(f"alter table memctx.messages owner to {role}")
        assert user_index.maintain(as_role).built == [user]
        with worker_app.pool.connection() as conn:
            assert _indexes(conn) == {user_index.index_name(user): True}
            assert not conn.execute("select rolsuper from pg_roles where rolname = %s", (role,)).fetchone()["rolsuper"]
    finally:
        with psycopg.connect(worker_app.url, autocommit=True) as conn:
            conn.execute(f"alter table memctx.messages owner to {admin}")
            conn.execute(f"alter table memctx.conversations owner to {admin}")


@pytest.mark.parametrize("version, iterative", [("0.7.0", False), ("0.7.4", False), ("0.8.0", True), ("0.10.1", True)])
def test_the_plan_inputs_read_whether_pgvector_scans_iteratively(heavy, version, iterative):
    worker_app, user, other, centers, rng = heavy
    with psycopg.connect(worker_app.url) as conn:  # the catalog's version, rolled back
        conn.execute("update pg_extension set extversion = %s where extname = 'vector'", (version,))
        assert conn.execute(QUERIES["search_plan_inputs"], {"user_id": user, "conversation_id": None}
                            ).fetchone()[4] is iterative
        conn.rollback()


def test_on_pgvector_before_0_8_searches_never_set_iterative_scans(heavy):
    """pgvector 0.7 reserves the `hnsw.` prefix and has no `hnsw.iterative_scan`: setting it
    fails the search. Here the settings statement fails as it would there, and the catalog says
    0.7.4: the user's searches still run, the user-wide one through their own index, and find
    what they find on 0.8."""
    worker_app, user, other, centers, rng = heavy
    assert user_index.maintain(worker_app).built == [user]
    opts = SearchOptions(k_dense=40, k_pool=100, k_lexical=40, threshold=-1.0, exact_limit=100)
    vec = _query(rng, centers)
    with worker_app.pool.connection() as conn:
        conversation = conn.execute("select id from memctx.conversations where user_id = %s limit 1",
                                    (user,)).fetchone()["id"]
    scopes = (None, conversation)
    on_0_8 = {scope: [m.id for m in MemorySearch(worker_app.pool, worker_app.embedder, opts).search(
        user, "jazz kayak", scope, limit=20, query_vec=vec)] for scope in scopes}
    with psycopg.connect(worker_app.url, autocommit=True) as conn:
        version = conn.execute("select extversion from pg_extension where extname = 'vector'").fetchone()[0]
        conn.execute("update pg_extension set extversion = '0.7.4' where extname = 'vector'")
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(search_module, "QUERIES",  # the settings fail as 0.7's do
                          {**QUERIES, "search_hnsw_settings": "select 1 / 0 as iterative_scan"})
            engine = MemorySearch(worker_app.pool, worker_app.embedder, opts)
            on_0_7 = {scope: [m.id for m in engine.search(user, "jazz kayak", scope, limit=20, query_vec=vec)]
                      for scope in scopes}
            assert engine._plan_inputs[(user, None)]["own_index"]
            assert not engine._plan_inputs[(user, None)]["iterative_scan"]
    finally:
        with psycopg.connect(worker_app.url, autocommit=True) as conn:
            conn.execute("update pg_extension set extversion = %s where extname = 'vector'", (version,))
    assert on_0_7 == on_0_8 and all(on_0_7.values())


class _AppView:
    """What `maintain` reads of an App: its URL and settings (here another role's)."""

    def __init__(self, url, settings):
        self.url, self.settings = url, settings


def test_the_worker_loop_builds_it_unprompted(heavy):
    """A worker process runs the loop: the index appears without anyone running a command."""
    worker_app, user, other, centers, rng = heavy
    loop = user_index.UserIndexes(worker_app)
    loop.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with worker_app.pool.connection() as conn:
                if _own_index(conn, user):
                    break
            time.sleep(0.2)
        with worker_app.pool.connection() as conn:
            assert _own_index(conn, user)
    finally:
        loop.stop()
    assert isinstance(loop.thread, threading.Thread) and not loop.thread.is_alive()
