"""Long messages as passages, against a real Postgres: the catch-up cuts and embeds them, memory
search finds a long reply by its relevant passage, and a context carries that passage as a cited
excerpt of the reply, while short turns stay whole and one user's passages never reach another."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from memctx.assemble import assembler_for
from memctx.assemble.context import ContextAssembler
from memctx.models import NewMessage
from memctx.pipeline.catchup import catch_up
from memctx.retrieve.search import search_memories
from memctx.sql import QUERIES
from support import as_user

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=timezone.utc)

# An assistant's long reply (~700 tokens): one paragraph answers the question asked later, the
# others are about other things.
FERRY = ("For Islay, the CalMac ferry leaves Kennacraig at 07:15 and reaches Port Ellen two hours later; "
         "book the car deck a week ahead in summer.")
OTHER = [f"Day {i}: walk the {place} trail in the morning, pack a rain jacket and snacks, and rest in the "
         f"afternoon at a cafe in {place} where the scones are said to be very good."
         for i, place in enumerate(["Glencoe", "Oban", "Mull", "Skye", "Torridon", "Ullapool", "Durness",
                                    "Inverness", "Aviemore", "Pitlochry", "Stirling", "Dunkeld"], 1)]
REPLY = "\n\n".join(OTHER[:6] + [FERRY] + OTHER[6:])
SHORT = [("user", "Can you plan a two-week trip around the Highlands for me?"),
         ("assistant", None),  # the long reply
         ("user", "Thanks! I also want to try a whisky tasting somewhere."),
         ("assistant", "The Lagavulin distillery runs tastings most afternoons."),
         ("user", "My sister is allergic to nuts, so cafes must be careful."),
         ("assistant", "Noted: I will keep nut-free options in mind.")]
QUESTION = "What time does the ferry to Islay leave Kennacraig?"


def _store(app, user, name="trip", reply=REPLY):
    conv = app.store.create_conversation(user, external_id=name)
    app.store.append_messages(user, conv.id, [
        NewMessage.build(role, text or reply, external_id=f"{name}-{i}", created_at=T0 + timedelta(minutes=i))
        for i, (role, text) in enumerate(SHORT)])
    return conv


def _passages(app, user):
    with app.pool.connection() as conn:
        return conn.execute("select p.*, m.text as message_text, m.token_count as message_tokens "
                            "from memctx.working_memory_chunks p join memctx.messages m on m.id = p.message_id "
                            "where p.user_id = %s order by p.message_id, p.part", (user,)).fetchall()


def _assembler(app) -> ContextAssembler:
    base = assembler_for(app)
    return ContextAssembler(base.pool, base.counter, base.search, replace(base.options, scope="user"))


def _stored_and_caught_up(app):
    """A user whose trip conversation is stored and caught up, a new conversation to ask in, and
    the long reply as stored."""
    user = uuid.uuid4()
    conv = _store(app, user)
    catch_up(app, user, conv.id)
    asked = app.store.create_conversation(user, external_id="ask")
    return user, conv, asked, app.store.list_messages(user, conv.id)[1]


def test_the_catch_up_cuts_long_messages_into_embedded_verbatim_passages_and_is_idempotent(app):
    user = uuid.uuid4()
    conv = _store(app, user)
    assert _passages(app, user) == []  # stored: nothing cut yet
    done = catch_up(app, user, conv.id)
    rows = _passages(app, user)
    assert done.passages == len(rows) >= 4
    assert {r["message_text"] for r in rows} == {REPLY}  # only the long reply: short turns stay whole
    assert rows[0]["message_tokens"] > app.settings.passage_min_tokens
    for r in rows:
        assert r["chunk_text"] in REPLY and r["embedding"] is not None and r["chunk_type"] == "passage"
        assert r["token_count"] == app.counter.count(r["chunk_text"]) <= app.settings.passage_tokens + 8
        assert r["conversation_id"] == conv.id and r["created_at"] == T0 + timedelta(minutes=1)
    assert [r["part"] for r in rows] == list(range(len(rows)))
    assert any(FERRY in r["chunk_text"] for r in rows)
    assert catch_up(app, user, conv.id).passages == 0 and len(_passages(app, user)) == len(rows)


def test_a_changed_text_is_cut_again_and_a_deleted_message_takes_its_passages(app):
    user = uuid.uuid4()
    conv = _store(app, user)
    catch_up(app, user, conv.id)
    changed = REPLY.replace("Kennacraig at 07:15", "Kennacraig at 09:30")
    with app.pool.connection() as conn:
        conn.execute("update memctx.messages set text = %s where user_id = %s and external_id = 'trip-1'",
                     (changed, user))
    assert _passages(app, user) == []  # the trigger dropped what no longer matches the text
    catch_up(app, user, conv.id)
    rows = _passages(app, user)
    assert rows and all(r["chunk_text"] in changed for r in rows) and any("09:30" in r["chunk_text"] for r in rows)
    app.store.delete_conversation(user, conv.id)
    assert _passages(app, user) == []


def test_a_long_reply_reaches_a_small_context_as_a_cited_excerpt(app):
    user, conv, asked, reply = _stored_and_caught_up(app)
    wc = _assembler(app).get_working_context(user, asked.id, QUESTION, 400)
    assert reply.token_count > 400
    assert FERRY in wc.text and REPLY not in wc.text
    assert f"assistant (excerpt of a {reply.token_count}-token reply): …" in wc.text
    cited = [s for s in wc.sources if s.id == reply.id]
    assert len(cited) == 1 and cited[0].detail.endswith("excerpt")
    assert (cited[0].external_id, cited[0].conversation_id, cited[0].seq) == ("trip-1", conv.id, 2)
    assert wc.tokens <= 400


def test_with_room_the_reply_comes_whole_and_short_turns_always_whole(app):
    user, conv, asked, reply = _stored_and_caught_up(app)
    wc = _assembler(app).get_working_context(user, asked.id, QUESTION, 4000)
    assert f"assistant: {REPLY}" in wc.text and "excerpt of" not in wc.text
    assert [s.detail for s in wc.sources if s.id == reply.id] in (["hit"], ["context"])
    small = _assembler(app).get_working_context(user, asked.id, "Which distillery runs whisky tastings?", 300)
    assert "assistant: The Lagavulin distillery runs tastings most afternoons." in small.text


def test_search_finds_the_reply_by_its_passage_where_its_own_vector_misses(app):
    user = uuid.uuid4()
    # The ferry paragraph last of a reply much longer than the embedder reads (256 word pieces).
    reply = "\n\n".join(OTHER + OTHER[:4] + [FERRY])
    conv = _store(app, user, reply=reply)
    catch_up(app, user, conv.id)
    with app.pool.connection() as conn:
        stored = conn.execute("select id from memctx.messages where user_id = %s and external_id = 'trip-1'",
                              (user,)).fetchone()["id"]
    memories = search_memories(app, user, "When does the boat to Islay sail?", limit=5)
    hit = next(m for m in memories if any(f.id == stored for f in m.fragments))
    fragment = next(f for f in hit.fragments if f.id == stored)
    assert fragment.passage is not None and FERRY in fragment.passage.text
    assert hit.similarity is not None and hit.similarity > 0.4


def test_another_users_passages_never_reach_a_context_or_a_search(app, database_url):
    mine, theirs = uuid.uuid4(), uuid.uuid4()
    conv = _store(app, mine, reply="\n\n".join(OTHER))  # no ferry in my reply
    their_conv = _store(app, theirs)
    catch_up(app, mine, conv.id)
    catch_up(app, theirs, their_conv.id)
    asked = app.store.create_conversation(mine, external_id="ask")
    for budget in (300, 4000):
        wc = _assembler(app).get_working_context(mine, asked.id, QUESTION, budget)
        assert "07:15" not in wc.text and "Port Ellen" not in wc.text
        assert wc.sources and all(s.conversation_id in (None, conv.id, asked.id) for s in wc.sources)
    found = search_memories(app, mine, QUESTION, limit=20)
    assert found and {f.conversation_id for m in found for f in m.fragments} == {conv.id}
    assert all(FERRY not in (f.passage.text if f.passage else "") for m in found for f in m.fragments)
    with as_user(database_url, mine) as conn:
        rows = conn.execute("select user_id, chunk_text from memctx.working_memory_chunks").fetchall()
        assert rows and {r["user_id"] for r in rows} == {mine}
        assert not any("Kennacraig" in r["chunk_text"] for r in rows)
    with app.pool.connection() as conn:
        stats = conn.execute(QUERIES["passage_stats"], {"user_id": theirs}).fetchone()
    assert stats["passages"] >= 4 and stats["messages"] == 1 and stats["bytes"] > 0
