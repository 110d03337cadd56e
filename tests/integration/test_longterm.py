"""Long-term summaries per conversation, and the continuity note of a user's next conversation."""

from __future__ import annotations

import uuid

from memctx.pipeline import longterm
from memctx.store import DEFAULT_USER
from support import say_by_sql

USER = DEFAULT_USER
TRIP = ["I am planning a trip to Lisbon with my partner Tomás in May.",
        "Great! How many days will you stay in Lisbon?",
        "Five days. Please don't suggest hotel chains, I prefer small guesthouses.",
        "Understood: small guesthouses only. I will look in Alfama.",
        "Can you remind me to book the Oceanarium tickets?",
        "Noted: book the Oceanarium tickets.",
        "What is the weather like in Lisbon in May?"]


def test_close_writes_a_searchable_long_term_summary_and_marks_the_conversation_closed(app):
    conv = app.store.create_conversation(USER, title="Lisbon trip")
    say_by_sql(app, conv.id, TRIP)
    summary = longterm.close_conversation(app, USER, conv.id, explicit=True)
    assert "Lisbon" in summary.summary and summary.last_seq == 7 and summary.first_seq == 1
    assert summary.token_count <= app.settings.board_length
    assert any("guesthouse" in f.lower() or "Oceanarium" in f for f in summary.key_facts + summary.action_items)
    assert "Lisbon" in str(summary.entities) or "Lisbon" in " ".join(summary.topics)
    with app.pool.connection() as conn:
        row = conn.execute("select embedding is not null as e, summary @@ to_tsquery('english', 'lisbon') as fts "
                           "from memctx.conversation_summaries where conversation_id = %s", (conv.id,)).fetchone()
        closed = conn.execute("select closed_at from memctx.conversations where id = %s", (conv.id,)).fetchone()
    assert row["e"] and row["fts"] and closed["closed_at"] is not None


def test_new_conversation_gets_a_continuity_note_of_the_last_one(app):
    old = app.store.create_conversation(USER, title="Lisbon trip")
    say_by_sql(app, old.id, TRIP)
    longterm.close_conversation(app, USER, old.id)
    new = app.store.create_conversation(USER, title="next chat")

    note = longterm.continuity_note(app, USER, current_conversation_id=new.id)
    assert note is not None and note.conversation_id == old.id
    assert any("weather" in q for q in note.pending_questions)
    assert "Lisbon" in note.text() and "Open questions" in note.text()
    assert longterm.continuity_note(app, USER, current_conversation_id=old.id) is None
    assert longterm.continuity_note(app, uuid.uuid4()) is None  # another user sees nothing


def test_closing_again_after_more_messages_rewrites_the_summary(app):
    conv = app.store.create_conversation(USER)
    say_by_sql(app, conv.id, TRIP[:3])
    first = longterm.close_conversation(app, USER, conv.id)
    say_by_sql(app, conv.id, TRIP[3:])
    second = longterm.close_conversation(app, USER, conv.id)
    assert (first.last_seq, second.last_seq) == (3, 7)
    with app.pool.connection() as conn:
        assert conn.execute("select count(*) as n from memctx.conversation_summaries").fetchone()["n"] == 1
