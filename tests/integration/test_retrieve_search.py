"""Memory search against a real Postgres with the real embedder."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta, timezone

import numpy as np
import psycopg
import pytest
from psycopg.pq import TransactionStatus

from memctx.db import make_pool
from memctx.models import NewMessage
from memctx.pipeline import catchup
from memctx.retrieve import MemorySearch, SearchOptions, TermOverlapReranker, search_memories
from memctx.retrieve.lexical import analyze
from memctx.retrieve.search import _one_round_trip, _search_settings
from memctx.retrieve.queries import SEARCH_QUERIES
from memctx.retrieve.signals import SIGNALS
from memctx.sql import QUERIES

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)

CHAT = [
    ("user", "I went to a pottery class yesterday and made a blue bowl.", "Ana"),
    ("assistant", "That sounds lovely! Will you keep going to the class?", "Ben"),
    ("user", "Yes, every Tuesday. My sister Clara is joining next week.", "Ana"),
    ("assistant", "Nice. By the way, my dog Rex learned to fetch the newspaper.", "Ben"),
    ("user", "Ha! Rex is a smart dog. What breed is he?", "Ana"),
    ("assistant", "He is a border collie, three years old.", "Ben"),
    ("user", "I am planning a hiking trip to the Dolomites in July.", "Ana"),
    ("assistant", "Great, bring good boots. The Dolomites are steep.", "Ben"),
]


def _store(app, user, chat=CHAT, external="chat"):
    conv = app.store.create_conversation(user, external_id=external)
    msgs = [NewMessage.build(role, text, external_id=f"D1:{i + 1}", created_at=T0 + timedelta(minutes=i),
                             metadata={"speaker": who, "session": 1})
            for i, (role, text, who) in enumerate(chat)]
    app.store.append_messages(user, conv.id, msgs)
    return conv


def test_search_finds_the_turn_and_pairs_it(app):
    user = uuid.uuid4()
    conv = _store(app, user)
    memories = search_memories(app, user, "What breed is Ben's dog?", conv.id, limit=3)
    top = memories[0]
    texts = [f.text for f in top.fragments]
    assert any("border collie" in t for t in texts) or any("Rex" in t for t in texts)
    # an assistant hit brings the user message before it; a user hit brings the reply after it
    hit = next(f for f in top.fragments if f.id == top.id)
    partner = [f for f in top.fragments if f.id != top.id]
    assert partner and partner[0].seq == (hit.seq - 1 if hit.role == "assistant" else hit.seq + 1)
    assert top.similarity is not None and top.provenance.matched_by


def test_a_search_reads_its_hits_partners_and_the_turns_either_side_only_with_neighbours(app):
    """Without neighbours, the turns a search reads are its hits and, to pair, their partners (the
    reply after a user turn, the user turn before a reply): the turn on the other side would
    never be shown."""
    user = uuid.uuid4()
    conv = _store(app, user)
    with app.pool.connection() as conn:
        stored = {r["seq"] for r in conn.execute("select seq from memctx.messages where conversation_id = %s",
                                                 (conv.id,))}
    for pair, neighbours in ((True, 0), (False, 0), (True, 1), (False, 1)):
        opts = SearchOptions(k_dense=2, k_lexical=2, k_recent=0, pair=pair, neighbours=neighbours)
        engine = MemorySearch(app.pool, app.embedder, opts)
        for query in ("What breed is Ben's dog?", "Is Ana planning a hiking trip?"):
            analysis = analyze(query, engine.speakers(user, conv.id))
            rows = engine.fetch(user, analysis, engine.embed_query(analysis.dense_text), conv.id, None, opts)
            hits = [r for r in rows if r["is_hit"]]
            assert {r["role"] for r in hits} >= ({"assistant"} if "dog" in query else {"user"})
            wanted = {r["seq"] + step for r in hits for step in range(-neighbours, neighbours + 1)}
            if pair:
                wanted |= {r["seq"] + (1 if r["role"] == "user" else -1) for r in hits}
            assert sorted(r["seq"] for r in rows) == sorted(wanted & stored), (pair, neighbours, query)


def test_a_search_statement_is_one_transaction_and_one_that_fails_is_rolled_back(app):
    """A search's statements run as one transaction in one round trip (`_one_round_trip`): its
    settings last until its COMMIT; a failed statement leaves the transaction to the pool, which
    rolls it back, and the connection serves the next search."""
    setting = "select current_setting('plan_cache_mode') as mode"
    with app.pool.connection() as conn:
        with _one_round_trip(conn):
            conn.execute("select set_config('plan_cache_mode', 'force_generic_plan', true)")
            inside = conn.execute(setting)
        assert inside.fetchone()["mode"] == "force_generic_plan"
        assert conn.info.transaction_status == TransactionStatus.IDLE
        assert conn.execute(setting).fetchone()["mode"] == "auto"
        conn.rollback()
        with pytest.raises(psycopg.errors.DivisionByZero):
            with _one_round_trip(conn):
                conn.execute("select set_config('plan_cache_mode', 'force_generic_plan', true)")
                conn.execute("select 1 / 0")
        assert conn.info.transaction_status == TransactionStatus.INERROR
    with app.pool.connection() as conn:
        assert conn.info.transaction_status == TransactionStatus.IDLE
        assert conn.execute(setting).fetchone()["mode"] == "auto"
    user = uuid.uuid4()
    conv = _store(app, user)
    assert search_memories(app, user, "What breed is Ben's dog?", conv.id, limit=3)


def test_search_is_scoped_to_the_user(app):
    owner, stranger = uuid.uuid4(), uuid.uuid4()
    _store(app, owner)
    assert search_memories(app, stranger, "pottery class", None, limit=5) == []
    assert search_memories(app, owner, "pottery class", None, limit=5)


def test_time_range_filters(app):
    user = uuid.uuid4()
    conv = _store(app, user)
    late = search_memories(app, user, "pottery class blue bowl", conv.id,
                           time_range=(T0 + timedelta(minutes=5), None), limit=10, threshold=-1.0)
    assert late and all(f.time >= T0 + timedelta(minutes=4) for m in late for f in m.fragments if f.id == m.id)
    assert all("pottery" not in f.text for m in late for f in m.fragments if f.id == m.id)
    everywhere = search_memories(app, user, "pottery class blue bowl", None,
                                 time_range=(T0 + timedelta(minutes=5), None), limit=10, threshold=-1.0)
    assert everywhere and all(f.time >= T0 + timedelta(minutes=5) for m in everywhere for f in m.fragments
                              if f.id == m.id)


def test_speakers_named_in_a_user_wide_query_are_a_speaker_signal_as_in_a_conversation(app):
    user = uuid.uuid4()
    _store(app, user)
    search = MemorySearch(app.pool, app.embedder)
    assert search.speakers(user, None) == ("Ana", "Ben")  # of all the user's conversations
    memories = search.search(user, "What breed is Ben's dog?", None, limit=3)
    assert memories and any(m.provenance.speaker_match for m in memories)


def test_a_time_range_also_scopes_the_summaries_found_across_conversations(app):
    user = uuid.uuid4()
    conv = _store(app, user)
    catchup.catch_up(app, user, conv.id)  # level-1 summaries of the first turns
    query = "pottery class blue bowl sister Clara"
    kinds = {m.kind for m in search_memories(app, user, query, None, limit=10, threshold=-1.0)}
    assert "summary" in kinds
    later = search_memories(app, user, query, None, time_range=(T0 + timedelta(days=1), None), limit=10,
                            threshold=-1.0)
    assert later == []  # nothing was said then: no summary of earlier turns either
    window = (T0 + timedelta(minutes=6), T0 + timedelta(minutes=8))  # the 7th and 8th turns
    found = search_memories(app, user, query, None, time_range=window, limit=10, threshold=-1.0)
    assert found and all(m.provenance.last_seq >= 7 for m in found if m.kind == "summary")


def test_threshold_drops_weak_dense_only_hits_but_keeps_lexical_ones(app):
    user = uuid.uuid4()
    conv = _store(app, user)
    strict = search_memories(app, user, "Dolomites", conv.id, limit=10, threshold=0.99)
    assert strict and all(m.provenance.ranks["lexical"] is not None for m in strict)
    assert any("Dolomites" in m.text for m in strict)


def test_rerank_seam_is_used(app):
    user = uuid.uuid4()
    conv = _store(app, user)
    engine = MemorySearch(app.pool, app.embedder, SearchOptions(limit=3), reranker=TermOverlapReranker(5.0))
    memories = engine.search(user, "newspaper fetch", conv.id)
    assert "newspaper" in memories[0].text


def _summary_of_the_first_turns(app, user, conv) -> None:
    first = app.store.list_messages(user, conv.id)[0]
    vec = app.embedder.embed(["Ana takes pottery classes every Tuesday."])[0]
    with app.pool.connection() as conn:
        conn.execute("insert into memctx.summaries (conversation_id, user_id, level, content, source_kind, source_ids,"
                     " first_seq, last_seq, token_count, embedding) values (%s, %s, 1, %s, 'message', %s, 1, 3, 9, %s)",
                     (conv.id, user, "Ana takes pottery classes every Tuesday.", [first.id], vec))


def test_user_wide_search_includes_live_summaries(app):
    user = uuid.uuid4()
    conv = _store(app, user)
    _summary_of_the_first_turns(app, user, conv)
    memories = search_memories(app, user, "pottery classes", None, limit=10)
    summaries = [m for m in memories if m.kind == "summary"]
    assert summaries and summaries[0].provenance.first_seq == 1 and summaries[0].provenance.last_seq == 3
    assert len(summaries[0].fragments) == 1  # summaries come alone


def test_user_wide_summaries_are_the_same_beside_the_turns_statement_or_after_it(app, monkeypatch):
    """A user-wide search reads its summaries in a statement of its own: on a second connection
    while the turns' statement runs, or, when the pool has none free (a pool of one), after it on
    the search's own connection. The memories are the same either way."""
    user = uuid.uuid4()
    conv = _store(app, user)
    _summary_of_the_first_turns(app, user, conv)
    MemorySearch(app.pool, app.embedder).search(user, "pottery")  # grows the pool if it holds one connection
    deadline = time.monotonic() + 10
    while app.pool.get_stats()["pool_size"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    beside = []
    real = MemorySearch._summaries_beside
    monkeypatch.setattr(MemorySearch, "_summaries_beside",
                        lambda self, params: beside.append(real(self, params)) or beside[-1])
    found = {}
    with make_pool(app.pool.conninfo, app.settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 1})) as one:
        for name, pool in (("two", app.pool), ("one", one)):
            engine = MemorySearch(pool, app.embedder, SearchOptions(limit=10))
            for _ in range(2):  # the second search of a scope runs without reading its plan's inputs first
                found.setdefault(name, []).append([m.as_json() for m in engine.search(user, "pottery classes Tuesday")])
    assert beside[0] is not None and beside[1] is not None  # the app's pool had a second connection
    assert beside[2] is None and beside[3] is None  # the pool of one had none: after the turns
    assert found["one"] == found["two"] and found["two"][0] == found["two"][1]
    assert any(m["kind"] == "summary" for m in found["one"][0])


# A filtered query prepared before ANALYZE must not keep a plan that scans HNSW and returns at
# most ef_search candidates (fewer than the filter leaves).
def _bulk(app, user, conversations: int, per: int, rng) -> list[uuid.UUID]:
    ids = []
    for c in range(conversations):
        conv = app.store.create_conversation(user, external_id=f"bulk-{c}")
        msgs = [NewMessage.build("user" if i % 2 == 0 else "assistant", f"note {c}-{i} about topic {i % 17}",
                                 external_id=f"m{i}") for i in range(per)]
        vecs = rng.standard_normal((per, 384)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        app.store.append_messages(user, conv.id, msgs, embeddings=vecs)
        ids.append(conv.id)
    return ids


@pytest.mark.parametrize("analyzed", [False, True])
def test_filtered_dense_search_returns_full_candidate_count_through_prepared_path(app, analyzed):
    rng = np.random.default_rng(7)
    target = uuid.uuid4()
    conv_ids = _bulk(app, target, conversations=2, per=150, rng=rng)
    for _ in range(4):  # other users' rows make the HNSW index look attractive
        _bulk(app, uuid.uuid4(), conversations=1, per=300, rng=rng)
    if analyzed:
        with app.pool.connection() as conn:
            conn.execute("analyze memctx.messages")
    k = 120  # more than hnsw.ef_search (40)
    # the exact plans, and the conversation's bounded plan on its generic plan as search.py runs it
    for name, conv, plan in (("search_conversation", conv_ids[0], "exact"), ("search_user", None, "exact"),
                             ("search_conversation", conv_ids[0], "bounded")):
        params = {"user_id": target, "conversation_id": conv, "tsquery": "", "terms": [], "since": None,
                  "until": None, "k_dense": k, "k_lexical": 10, "k_recent": 0, "window": 0, "pair": False, "smooth": 1.0,
                  "k_match": 5000, "scope_size": 150}
        with app.pool.connection() as conn:
            for i in range(8):  # psycopg prepares after 5 executions
                vec = rng.standard_normal(384).astype(np.float32)
                params["query_vec"] = vec / np.linalg.norm(vec)
                with conn.transaction():
                    _search_settings(conn, None, {**params, "parallel_workers": 0, "plan_cache_mode":
                                                  "force_generic_plan" if plan == "bounded" else "force_custom_plan"})
                    rows = conn.execute(SEARCH_QUERIES[(name, plan)], params, prepare=True).fetchall()
                assert all(s.rank_column in row for row in rows for s in SIGNALS)
                dense = [r for r in rows if r["dense_rank"] is not None]
                assert len(dense) == k, f"{name} {plan} run {i}: {len(dense)} dense candidates, expected {k}"
                assert sorted(r["dense_rank"] for r in dense) == list(range(1, k + 1))
    # and through the public API (the conversation's bounded search on its prepared generic plan)
    engine = MemorySearch(app.pool, app.embedder, SearchOptions(k_dense=k, threshold=-1.0, k_recent=0, pair=False))
    for _ in range(7):
        assert len(engine.search(target, "topic 5", conv_ids[0], limit=k)) == k


def test_dense_candidates_are_the_exact_top_k(app):
    rng = np.random.default_rng(3)
    user = uuid.uuid4()
    (conv,) = _bulk(app, user, conversations=1, per=200, rng=rng)
    vec = rng.standard_normal(384).astype(np.float32)
    vec /= np.linalg.norm(vec)
    with app.pool.connection() as conn:
        rows = conn.execute(QUERIES["rank_conversation"], {"user_id": user, "conversation_id": conv, "query_vec": vec,
                                                          "tsquery": ""}).fetchall()
        exact = {r["id"] for r in sorted(rows, key=lambda r: -r["similarity"])[:30]}
        got = conn.execute(SEARCH_QUERIES[("search_conversation", "exact")], {
            "user_id": user, "conversation_id": conv, "query_vec": vec, "tsquery": "", "terms": [], "since": None,
            "until": None, "k_dense": 30, "k_lexical": 1, "k_recent": 0, "window": 0, "pair": False, "smooth": 0.0}).fetchall()
    assert {r["id"] for r in got if r["dense_rank"] is not None} == exact
    assert analyze("").tsquery == ""


FIRST_PERSON_CHAT = [
    ("user", "Hey Melanie! How was your weekend? Did the kids like the museum?", "Caroline"),
    ("assistant", "I took my kids camping by the lake and we roasted marshmallows.", "Melanie"),
    ("user", "That sounds like fun. I spent mine at a support group.", "Caroline"),
    ("assistant", "I also finished a pottery bowl in my class on Saturday.", "Melanie"),
]


def test_the_dense_list_embeds_a_named_speaker_in_the_first_person(app):
    """A question about a named speaker is embedded as that speaker's own turns speak."""
    user = uuid.uuid4()
    conv = _store(app, user, FIRST_PERSON_CHAT, "first-person")
    query = "What does Melanie do with Melanie's kids?"
    search = MemorySearch(app.pool, app.embedder, SearchOptions(threshold=-1.0, pair=False))
    memories = {m.fragments[0].text: m for m in search.search(user, query, conv.id, limit=10)}
    assert set(memories) == {text for _, text, _ in FIRST_PERSON_CHAT}
    turns = app.embedder.embed([text for _, text, _ in FIRST_PERSON_CHAT])
    asked, raw = (search.embed_query(q) for q in ("What does I do with my kids?", query))
    for (_, text, _), vec in zip(FIRST_PERSON_CHAT, turns):
        assert memories[text].similarity == pytest.approx(float(np.dot(vec, asked)), abs=1e-3)
    # what the user notices: with the name, the turn addressed to Melanie comes nearest; in the
    # first person, the turn Melanie said about her kids does
    assert float(np.dot(turns[0], raw)) > float(np.dot(turns[1], raw))
    assert float(np.dot(turns[1], asked)) > float(np.dot(turns[0], asked))
