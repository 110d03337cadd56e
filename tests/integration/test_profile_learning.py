"""The worker learns a profile per user as it summarizes and on close: sourced, idempotent, with
explicit corrections winning at once, inferences earning it, edits and deletions sticking, and
forgetting a conversation or a user forgetting what was learned from it."""

from __future__ import annotations

import uuid
from dataclasses import replace as replaced

import pytest

from memctx.assemble.context import ContextAssembler, assembler_for
from memctx.assemble.repeats import repeated_sentences
from memctx.learn.recall import ProfileReader
from memctx.pipeline import learning, profile
from memctx.pipeline.catchup import catch_up, regenerate
from memctx.pipeline.longterm import close_conversation
from memctx.store import DEFAULT_USER
from support import say_by_sql

USER = DEFAULT_USER
FIRST = ["I'm vegetarian and allergic to peanuts.", "Noted: vegetarian, no peanuts.",
         "I live in Porto with my wife Ana.", "Porto is lovely.",
         "Please keep your answers short.", "Will do.",
         "Hi!"]


def _active(app, user=USER):
    return {i.value: i for i in profile.list_profile(app, user)}


def test_catch_up_learns_sourced_items_once(app):
    conv = app.store.create_conversation(USER)
    say_by_sql(app, conv.id, FIRST)
    result = catch_up(app, USER, conv.id)
    items = _active(app)
    assert "I'm vegetarian and allergic to peanuts" in items
    assert "I live in Porto with my wife Ana" in items
    diet = items["I'm vegetarian and allergic to peanuts"]
    assert diet.kind == "preference" and diet.topic == "diet" and diet.person == "user" and diet.seen_count == 1
    assert [s.conversation_id for s in diet.sources] == [conv.id]
    instruction = next(i for i in items.values() if i.kind == "instruction")
    assert "answers short" in instruction.value
    assert result.learned >= 3
    # an assistant without a name speaks for nobody
    assert not any(i.value.startswith("Noted") or "lovely" in i.value for i in items.values())

    # a catch-up after a crash, or a regeneration, learns nothing twice
    before = {v: (i.id, i.seen_count) for v, i in items.items()}
    assert learning.learn_all(app, USER, conv.id).messages == 0
    regenerate(app, USER, conv.id)
    after = {v: (i.id, i.seen_count) for v, i in _active(app).items()}
    assert after == before


def test_said_again_elsewhere_is_seen_again(app):
    for text in ("I'm vegetarian and allergic to peanuts.", "Like I said, I'm vegetarian and allergic to peanuts."):
        conv = app.store.create_conversation(USER)
        say_by_sql(app, conv.id, [text, "ok"])
        close_conversation(app, USER, conv.id, explicit=True)
    diet = next(i for i in _active(app).values() if "peanuts" in i.value)
    assert diet.seen_count == 2 and len({s.conversation_id for s in diet.sources}) == 2
    assert diet.confidence > 0.9


def test_an_explicit_statement_replaces_at_once_and_keeps_the_old_as_history(app):
    old = app.store.create_conversation(USER)
    say_by_sql(app, old.id, ["I live in Porto.", "Nice."])
    catch_up(app, USER, old.id)
    new = app.store.create_conversation(USER)
    say_by_sql(app, new.id, ["Actually, we moved to Lisbon last month.", "Congratulations!"])
    catch_up(app, USER, new.id)
    items = profile.list_profile(app, USER, status=None)
    porto = next(i for i in items if "Porto" in i.value)
    lisbon = next(i for i in items if "Lisbon" in i.value)
    assert lisbon.status == "active" and porto.status == "replaced"
    assert porto.replaced_by == lisbon.id and porto.replaced_at is not None
    assert lisbon.key == porto.key


def test_a_batch_merges_again_when_the_profile_moved_while_it_was_learned(app):
    """A batch is merged outside the profile lock to embed only what is new; another catch-up of
    the same user that lands meanwhile must not be merged over."""
    elsewhere = app.store.create_conversation(USER)
    say_by_sql(app, elsewhere.id, ["I live in Porto.", "Nice."])
    conv = app.store.create_conversation(USER)
    say_by_sql(app, conv.id, ["Actually, we moved to Lisbon last month.", "Congratulations!"])
    plain = learning.learner_of(app)

    class Interleaved:
        name = plain.name

        def learn(self, messages, known=()):
            found = plain.learn(messages, known)
            learning.learn_all(app, USER, elsewhere.id)  # lands between this batch's read and its commit
            return found

    assert learning.learn_all(app, USER, conv.id, Interleaved()).candidates >= 1
    items = profile.list_profile(app, USER, status=None)
    porto = next(i for i in items if "Porto" in i.value)
    lisbon = next(i for i in items if "Lisbon" in i.value)
    assert porto.status == "replaced" and porto.replaced_by == lisbon.id and lisbon.status == "active"
    with app.pool.connection() as conn:
        missing = conn.execute("select count(*) as n from memctx.profile_items where user_id = %s "
                               "and embedding is null", (USER,)).fetchone()["n"]
    assert missing == 0


def test_an_inferred_preference_changes_only_after_repeated_overrides(app):
    conv = app.store.create_conversation(USER)
    asks = ["Write a function in Python that sorts a list.", "def f(x): return sorted(x)",
            "Now parse a CSV file in Python.", "import csv",
            "Can you show it in JavaScript?", "const f = x => x",
            "And a regex in Python please.", "import re",
            "Show me a fetch call in JavaScript.", "fetch(url)",
            "Write a debounce in JavaScript.", "function debounce() {}"]
    say_by_sql(app, conv.id, asks[:4])
    catch_up(app, USER, conv.id, force_board=True)
    python = next(i for i in _active(app).values() if i.topic == "tech")
    assert python.value == "writes code in Python" and not python.explicit and python.seen_count == 2
    sure = python.confidence
    say_by_sql(app, conv.id, asks[4:8])  # one override, then Python again: still Python, the override cleared
    catch_up(app, USER, conv.id, force_board=True)
    python = next(i for i in _active(app).values() if i.topic == "tech")
    assert python.value == "writes code in Python" and python.overrides == 0 and python.seen_count == 3
    assert python.confidence > sure
    say_by_sql(app, conv.id, asks[8:10])  # one override: confidence falls, the value stays
    catch_up(app, USER, conv.id, force_board=True)
    python = next(i for i in _active(app).values() if i.topic == "tech")
    assert python.value == "writes code in Python" and python.overrides == 1 and python.confidence < sure
    say_by_sql(app, conv.id, asks[10:])  # the second in a row: it changes
    catch_up(app, USER, conv.id, force_board=True)
    now = next(i for i in _active(app).values() if i.topic == "tech")
    assert now.value == "writes code in JavaScript" and now.seen_count == 2
    old = profile.get_item(app, USER, python.id)
    assert old.status == "replaced" and old.replaced_by == now.id


def test_edits_and_deletions_stick_against_relearning(app):
    conv = app.store.create_conversation(USER)
    say_by_sql(app, conv.id, FIRST)
    catch_up(app, USER, conv.id)
    items = _active(app)
    edited = profile.edit_item(app, USER, items["I live in Porto with my wife Ana"].id, "I live in Porto with Ana")
    deleted = profile.delete_item(app, USER, items["I'm vegetarian and allergic to peanuts"].id)
    assert edited.edited_at is not None and deleted.status == "deleted"
    regenerate(app, USER, conv.id)  # everything learned again from the same messages
    again = _active(app)
    assert "I live in Porto with Ana" in again and "I live in Porto with my wife Ana" not in again
    assert not any("peanuts" in v for v in again)
    # said again in a new conversation, the deleted item stays deleted
    other = app.store.create_conversation(USER)
    say_by_sql(app, other.id, ["I'm vegetarian and allergic to peanuts.", "ok"])
    catch_up(app, USER, other.id)
    assert not any("peanuts" in v for v in _active(app))


def test_forgetting_a_conversation_forgets_what_was_learned_from_it(app):
    old = app.store.create_conversation(USER)
    say_by_sql(app, old.id, ["I live in Porto.", "Nice.", "I have a cat named Miso.", "Cute."])
    catch_up(app, USER, old.id)
    new = app.store.create_conversation(USER)
    say_by_sql(app, new.id, ["We moved to Lisbon last month.", "Great.", "I have a cat named Miso.", "Still cute."])
    catch_up(app, USER, new.id)
    assert {"We moved to Lisbon last month", "I have a cat named Miso"} <= set(_active(app))
    app.store.delete_conversation(USER, new.id)
    items = _active(app)
    assert "We moved to Lisbon last month" not in items
    assert items["I live in Porto"].status == "active"  # what its replacement replaced is current again
    assert items["I have a cat named Miso"].seen_count == 1  # learned from the other conversation too
    app.store.forget_user(USER)
    assert profile.list_profile(app, USER, status=None) == []


def test_learning_is_per_user_under_row_level_security(app, database_url):
    from support import as_user

    other = uuid.uuid4()
    mine = app.store.create_conversation(USER)
    say_by_sql(app, mine.id, ["I'm allergic to cats.", "Noted."])
    catch_up(app, USER, mine.id)
    theirs = app.store.create_conversation(other)
    say_by_sql(app, theirs.id, ["I'm allergic to dogs.", "Noted."])
    catch_up(app, other, theirs.id)
    with as_user(database_url, other) as conn:
        values = [r["value"] for r in conn.execute("select value from memctx.profile_items")]
        sources = conn.execute("select count(*) as n from memctx.profile_sources").fetchone()["n"]
    assert values == ["I'm allergic to dogs"] and sources == 1
    scoped = app.for_user(other)
    assert [i.value for i in profile.list_profile(scoped, other)] == ["I'm allergic to dogs"]
    with pytest.raises(LookupError):
        profile.delete_item(scoped, other, next(iter(_active(app).values())).id)


def _agent_turns(date_args, results):
    """An agent's calls of search_flights with these arguments, each answered by its result."""
    from memctx.models import NewMessage

    out = [NewMessage.build("user", "Find me a flight to Rome on 3 May.")]
    for i, (args, (content, error)) in enumerate(zip(date_args, results)):
        out.append(NewMessage.build("assistant", [{"type": "tool_call", "name": "search_flights", "id": f"c{i}",
                                                   "arguments": {"to": "FCO", "date": args}}]))
        out.append(NewMessage.build("tool", [{"type": "tool_result", "tool_call_id": f"c{i}", "content": content,
                                              **({"is_error": True} if error else {})}]))
    return out


def test_a_tool_error_then_a_success_is_a_procedure_brought_back_when_the_error_returns(app):
    from memctx.assemble import assembler_for

    bad = ("Invalid date '03/05/2024': expected YYYY-MM-DD", True)
    good = ('[{"flight": "TP836", "price": 120}]', False)
    first = app.store.create_conversation(USER)
    app.store.append_messages(USER, first.id, _agent_turns(["03/05/2024", "2024-05-03"], [bad, good]))
    catch_up(app, USER, first.id, force_board=True)
    second = app.store.create_conversation(USER)
    app.store.append_messages(USER, second.id, _agent_turns(["04/05/2024"], [("Invalid date '04/05/2024': "
                                                                              "expected YYYY-MM-DD", True)]))
    catch_up(app, USER, second.id, force_board=True)
    [procedure] = profile.procedures(app, USER)
    assert procedure.tool == "search_flights" and procedure.error == "invalid date …: expected yyyy-mm-dd"
    assert '"2024-05-03"' in procedure.fix and (procedure.seen_count, procedure.resolved) == (2, 1)
    assert {s.conversation_id for s in procedure.sources} == {first.id, second.id}
    assert learning.learn_all(app, USER, second.id).procedures == 0  # counted once

    # the same error again, in the conversation at hand: what worked comes with the context
    wc = assembler_for(app).get_working_context(USER, second.id, "Try again please.", 1000)
    section = wc.messages[1]["content"]
    assert "when search_flights failed" in section and '"2024-05-03"' in section and "1 of 2 times" in section
    assert any(s.kind == "procedure" for s in wc.sources)
    # and not where no tool failed
    quiet = app.store.create_conversation(USER)
    plain = assembler_for(app).get_working_context(USER, quiet.id, "Try again please.", 1000)
    assert not any(s.kind == "procedure" for s in plain.sources)


def test_the_profile_section_keeps_within_its_cap_and_says_nothing_twice(app):
    """At a large budget the profile's section keeps to `max_tokens` (the rest goes to the
    memories), and an item whose turn the memories show is not said again in it."""
    facts = ["I'm vegetarian and allergic to peanuts.", "I live in Porto with my wife Ana.",
             "I work as a nurse at Saint Mary's hospital.", "I have a golden retriever named Biscuit.",
             "I play the cello in a community orchestra.", "I'm training for the Berlin marathon in September.",
             "My sister Ana is getting married in June.", "I drive a 2012 Honda Civic."]
    for fact in facts:  # each in a conversation of its own: memories of other conversations
        conv = app.store.create_conversation(USER)
        say_by_sql(app, conv.id, [fact, "Good to know."])
        close_conversation(app, USER, conv.id, explicit=True)
    new = app.store.create_conversation(USER)
    base = assembler_for(app)

    def profile_section(max_tokens: int, query: str, budget: int):
        reader = ProfileReader(app.pool, replaced(base.profile.options, max_tokens=max_tokens, min_similarity=-1))
        assembler = ContextAssembler(base.pool, base.counter, base.search, replaced(base.options, scope="user"),
                                     profile=reader)
        wc = assembler.get_working_context(USER, new.id, query, budget)
        return next(s for s in wc.sections if s.name == "profile"), wc

    question = ("What do you know of me: my diet and allergies, my home in Porto and my wife, my work as a nurse, "
                "my dog, the cello, the marathon, my sister's wedding and my car?")
    uncapped, _ = profile_section(10_000, question, 4000)
    capped, _ = profile_section(60, question, 4000)
    assert uncapped.tokens > 60 and 0 < capped.tokens <= 60
    for budget in range(200, 1200, 100):
        _, wc = profile_section(10_000, question, budget)
        assert repeated_sentences(wc.messages) == 0, wc.messages
