"""The learning layer's pure rules: what a message says about its person, how it joins the profile,
tool procedures, and which profile lines a context shows."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from uuid import uuid4

from memctx.learn.extract import ExtractiveLearner, learn_message
from memctx.learn.merge import OVERRIDES_TO_CHANGE, merge, renumbered, says, similar
from memctx.learn.patterns import episodes, errors_in, signature
from memctx.learn.recall import (Hit, ProfileOptions, ProfileView, Rating, keyed, profile_lines, rated,
                                 replaced_notes)
from memctx.learn.topics import slot_of, subject_of, topic_of, topics_of
from memctx.learn.types import ItemSource, Procedure, ProfileItem, Said
from memctx.retrieve.types import Fragment, Memory

T0 = datetime(2024, 5, 3, 10, tzinfo=timezone.utc)
CONV = uuid4()


def said(text: str, seq: int = 1, role: str = "user", speaker: str | None = None, blocks=()) -> Said:
    return Said(uuid4(), CONV, seq, role, speaker, text, T0 + timedelta(minutes=seq), f"m{seq}", tuple(blocks))


def test_statements_about_oneself_are_learned_with_kind_topic_subject_and_slot():
    found = {c.value: c for c in ExtractiveLearner().learn([
        said("Oh, by the way, I'm vegetarian and allergic to peanuts.", 1),
        said("Please keep your answers short.", 2),
        said("My sister lives in Berlin.", 3),
        said("I just turned 32 on February 12th, so I feel older.", 4),
        said("I'm planning to run a marathon in May.", 5),
        said("Hey! How are you?", 6), said("That sounds amazing, you got this!", 7),
        said("What should I cook tonight?", 8)])}
    diet = found["I'm vegetarian and allergic to peanuts"]
    assert (diet.kind, diet.topic, diet.attribute, diet.subject, diet.person) == ("preference", "diet", "diet", "self", "user")
    assert found["Please keep your answers short"].kind == "instruction"
    sister = found["My sister lives in Berlin"]
    assert (sister.subject, sister.attribute) == ("sister", "home")
    assert found["I just turned 32 on February 12th"].attribute == "age"
    assert any(c.kind == "plan" and "marathon" in c.value for c in found.values())
    assert len(found) == 5  # greetings, cheering and questions are nothing


def test_an_unnamed_assistant_speaks_for_nobody_and_a_named_speaker_for_themselves():
    assert learn_message(said("I live in Oslo.", role="assistant")) == []
    [item] = learn_message(said("I live in Oslo.", role="assistant", speaker="Mel"))
    assert item.person == "Mel"


def test_a_correction_is_marked_and_stripped_of_its_opening():
    [c] = learn_message(said("Actually, we moved to Lisbon last month."))
    assert c.value == "We moved to Lisbon last month" and c.correction and c.attribute == "home"


def test_requests_infer_a_language_and_an_answer_length_without_saying_it():
    found = learn_message(said("Can you write a parser in Rust? Shorter please."))
    assert {(c.value, c.explicit) for c in found} == {("writes code in Rust", False), ("prefers short answers", False)}


def test_topics_subjects_and_slots():
    assert topics_of("What should I cook tonight?") == ("diet",)
    assert topic_of("I have a golden retriever") == "general" and topic_of("my dog barks") == "pets"
    assert subject_of("My little brother plays chess") == "brother" and subject_of("I play chess") == "self"
    assert slot_of("I work as a nurse")[0] == "job" and slot_of("I'm 34 years old")[0] == "age"
    assert slot_of("I ran 5 miles") is None and slot_of("I'm 5 minutes late") is None


def _item(value, *, key="user|self|home|home", status="active", explicit=True, seen=1, sources=(), **kw):
    return ProfileItem(id=uuid4(), person="user", kind="fact", subject="self", topic=key.split("|")[2], key=key,
                       value=value, explicit=explicit, status=status, origin="learned", confidence=0.9,
                       seen_count=seen, overrides=0, useful=0, first_seen=T0, last_seen=T0,
                       sources=tuple(sources), **kw)


def _candidates(*texts, start=10):
    return [c for i, t in enumerate(texts) for c in learn_message(said(t, start + i))]


def test_explicit_values_replace_at_once_keeping_the_old_as_history():
    porto = _item("I live in Porto")
    merged = merge([porto], _candidates("We moved to Lisbon last month."))
    [new], [old] = merged.inserted, merged.updated
    assert new.value == "We moved to Lisbon last month" and old.id == porto.id
    assert (old.status, old.replaced_by) == ("replaced", new.id) and old.replaced_at == new.first_seen


def test_the_same_said_again_is_a_sighting_and_the_same_message_twice_nothing():
    message = said("I'm vegetarian and allergic to peanuts.", 3)
    source = ItemSource(message.id, CONV, message.created_at)
    item = _item("I'm vegetarian and allergic to peanuts", key="user|self|diet|diet", sources=[source])
    again = merge([item], learn_message(message))
    assert again.inserted == [] and again.updated == [] and again.counts["known"] == 1
    seen = merge([item], _candidates("As I said, I'm vegetarian and allergic to peanuts."))
    assert seen.updated[0].seen_count == 2 and seen.counts["seen"] == 1 and seen.updated[0].confidence > 0.9


def test_a_tombstone_is_never_learned_again():
    gone = _item("I'm vegetarian and allergic to peanuts", key="user|self|diet|diet", status="deleted")
    merged = merge([gone], _candidates("I'm vegetarian and allergic to peanuts!"))
    assert merged.inserted == [] and merged.counts["suppressed"] == 1


def test_an_inference_changes_only_after_repeated_overrides_in_a_row():
    key = "user|self|tech|programming language"
    python = _item("writes code in Python", key=key, explicit=False, seen=3)
    first = merge([python], _candidates("Show it in Go please."))
    [drafted] = first.updated
    assert drafted.status == "active" and drafted.overrides == 1 and drafted.confidence < 0.875
    assert OVERRIDES_TO_CHANGE == 2
    second = merge([python], _candidates("Show it in Go please.", "Now a server in Go."))
    assert [d.value for d in second.inserted] == ["writes code in Go"]
    assert second.updated[0].status == "replaced" and second.inserted[0].seen_count == 2
    # a sighting of the current value between two overrides clears them
    third = merge([python], _candidates("Show it in Go please.", "And in Python again?", "Now a server in Go."))
    assert third.inserted == [] and third.updated[0].value == "writes code in Python"


def test_numbers_and_corrections_update_what_they_restate():
    assert renumbered("I've read 120 pages of the book", "I've now read 220 pages of the book")
    assert not renumbered("I have 2 cats", "I ran 5 miles")
    pages = _item("I've read 120 pages of Sapiens", key="user|self|media|")
    merged = merge([pages], _candidates("I've read 220 pages of Sapiens so far."))
    assert merged.updated[0].status == "replaced" and "220" in merged.inserted[0].value
    vegetarian = _item("I'm vegetarian", key="user|self|diet|")
    fixed = merge([vegetarian], _candidates("Sorry, I meant I'm vegan, not vegetarian."))
    assert fixed.counts["replaced"] == 1


def test_similar_and_says():
    assert similar("I live in Porto with Ana", "I live in Porto with my wife Ana")
    assert not similar("I have 2 cats", "I have 3 cats")
    assert says("user: I'm 34 years", "I'm 34 years old") and not says("I'm 35 years", "I'm 34 years old")


def test_tool_errors_and_the_later_call_that_worked_are_an_episode():
    def call(args, i):
        return {"type": "tool_call", "name": "search_flights", "arguments": args, "id": f"c{i}"}

    def result(content, i, error=False):
        return {"type": "tool_result", "content": content, "tool_call_id": f"c{i}", **({"is_error": True} if error else {})}
    messages = [
        said("[tool call]", 1, "assistant", blocks=[call({"date": "03/05/2024"}, 1)]),
        said("error", 2, "tool", blocks=[result("Invalid date '03/05/2024': use YYYY-MM-DD", 1, True)]),
        said("[tool call]", 3, "assistant", blocks=[call({"date": "03/05"}, 2)]),
        said("error", 4, "tool", blocks=[result("Invalid date '03/05': use YYYY-MM-DD", 2)]),
        said("[tool call]", 5, "assistant", blocks=[call({"date": "2024-05-03"}, 3)]),
        said("ok", 6, "tool", blocks=[result([{"flight": "TP123"}], 3)]),
        said("[tool call]", 7, "assistant", blocks=[{"type": "tool_call", "name": "book", "arguments": {}}]),
        said("error", 8, "tool", blocks=[{"type": "tool_result", "content": "503 service unavailable"}])]
    fixed, open_ = episodes(messages)
    assert (fixed.tool, fixed.error, fixed.fix) == ("search_flights", "invalid date …: use yyyy-mm-dd",
                                                    '{"date": "2024-05-03"}')
    assert fixed.error_message.seq == 2 and fixed.fix_message.seq == 5
    assert (open_.tool, open_.fix) == ("book", None)
    assert signature("File '/tmp/a.csv' not found (errno 2)") == "file … not found (errno #)"
    turns = [{"role": "assistant", "content": '[tool call search_flights({"date": "5/3"})]'},
             {"role": "tool", "content": "Invalid date '5/3': use YYYY-MM-DD"}]
    assert errors_in(turns) == [("search_flights", "invalid date …: use yyyy-mm-dd")]


def _fragment(text: str, seq: int) -> Fragment:
    return Fragment(uuid4(), CONV, "user", text, seq, T0, token_count=10)


def _memory(fragment: Fragment, score: float) -> Memory:
    return Memory("message", fragment.id, CONV, (fragment,), score, 0.5)


def test_ratings_weigh_memories_within_a_bound():
    a, b = _fragment("The key is under the pot", 1), _fragment("The key is under the pot", 2)
    memories = [_memory(a, 0.05), _memory(b, 0.048)]
    opts = ProfileOptions()
    view = ProfileView(ratings={b.id.int: Rating(useful=2)})
    assert [m.id for m in keyed(memories, view, opts)] == [b.id, a.id]
    assert rated(Rating(useful=50), opts) == 1 + opts.useful_boost * opts.useful_cap
    assert rated(Rating(wrong=1), opts) < 1


def test_profile_items_are_keys_to_their_source_turns():
    evidence = _fragment("By the way, I adopted a cat named Luna last week.", 7)
    item = _item("I adopted a cat named Luna last week", key="user|self|pets|")
    hit = Hit(item, 0.05, 1, None, None, (evidence,))
    other = _memory(_fragment("Cats need vaccines every year.", 3), 0.04)
    opts = ProfileOptions(key_weight=1.0)
    out = keyed([other], ProfileView(hits=(hit,)), opts)
    assert out[0].id == evidence.id and out[0].provenance.ranks == {"profile": 1}
    assert keyed([other], ProfileView(hits=(hit,)), ProfileOptions(key_weight=0)) == [other]


def test_profile_lines_leave_out_what_the_context_shows_and_mark_what_was_replaced():
    shown_turn = _fragment("I'm vegetarian", 1)
    diet = Hit(_item("I'm vegetarian", key="user|self|diet|diet"), 0.06, 1, None, 1, (shown_turn,))
    home = Hit(_item("We moved to Lisbon"), 0.05, 2, None, None, (_fragment("We moved to Lisbon", 2),),
               replaced=(("I live in Porto", T0),))
    lines = profile_lines(ProfileView(hits=(diet, home)), {shown_turn.id.int}, ProfileOptions())
    assert [line.item.value for line in lines] == ["We moved to Lisbon"]
    assert "(before: I live in Porto; replaced on 3 May 2024)" in lines[0].text
    procedure = Procedure(uuid4(), "search_flights", "invalid date …", '{"date": "2024-05-03"}', 4, 3, 0, T0, T0)
    view = ProfileView(procedures=(procedure,), errors=(("search_flights", "invalid date …"),))
    [line] = profile_lines(view, set(), ProfileOptions())
    assert "3 of 4 times" in line.text and line.procedure is procedure


def test_turns_and_summaries_that_state_a_replaced_value_are_marked_or_left_out():
    old = _fragment("I live in Porto.", 1)
    summary = Memory("summary", uuid4(), CONV, (Fragment(uuid4(), CONV, "summary", "user: I live in Porto. I like tea.",
                                                          None, T0),), 0.01, None)
    view = ProfileView(replaced={old.id.int: ("I live in Porto", "We moved to Lisbon", T0)})
    marked, cut = replaced_notes([_memory(old, 0.05), summary], view)
    assert marked.fragments[0].text == "I live in Porto. (replaced on 3 May 2024 by: We moved to Lisbon)"
    assert cut.fragments[0].text == "I like tea."
