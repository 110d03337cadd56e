"""Counting and leaving out repeated sentences across the sections of a context."""

from uuid import uuid4

from memctx.assemble.repeats import elide_said, key, memories_once, repeated_sentences, sentences, strip_said
from memctx.retrieve.types import Fragment, Memory

CONV = uuid4()


def test_a_sentence_is_the_same_whoever_says_it_and_whatever_frames_it():
    texts = ["Priya: I'll buy the Pena Palace tickets tonight.",
             "- user: I'll buy the Pena Palace tickets tonight!",
             "[2 March 2026] I’ll buy the Pena Palace tickets tonight"]
    assert len({key(t) for t in texts}) == 1
    assert repeated_sentences(texts) == 2


def test_short_sentences_dates_and_names_may_repeat():
    assert repeated_sentences(["Priya: Thanks!", "Guide: Thanks!", "[2 March 2026]", "[2 March 2026]"]) == 0
    assert key("We land on 24 May at 9:40.") == "we land on 24 may at 9 40"
    # what a relative date meant, as the memory section notes it after a turn, is a date too
    lines = ["Mel: [image: a photo of a score board] (Last week = the week before 16 July 2023)",
             "Mel: [image: a photo of a table with books] (Last week = the week before 16 July 2023)"]
    assert repeated_sentences(lines) == 0
    assert key("I ran a charity race yesterday (yesterday = 19 May 2023)") == "i ran a charity race yesterday"


def test_strip_said_keeps_what_is_new_in_order_and_remembers_it():
    said = {key("Tomás is vegetarian, and I don't eat shellfish.")}
    text = "Priya planned a week in Lisbon with Tomás. Tomás is vegetarian, and I don't eat shellfish.\nuser: Ok."
    assert strip_said(text, said) == "Priya planned a week in Lisbon with Tomás.\nuser: Ok."
    assert strip_said("Priya planned a week in Lisbon with Tomás.", said) == ""
    assert sentences("One. Two three? Four\nfive") == ["One.", "Two three?", "Four", "five"]


def test_elide_said_marks_what_it_leaves_out_of_a_quoted_turn():
    said = {key("Your kind words mean a lot.")}
    turn = "Thanks, Mel! Your kind words mean a lot. I'm taking the kids to the park this weekend."
    assert elide_said(turn, said) == "Thanks, Mel! … I'm taking the kids to the park this weekend."
    assert key("I'm taking the kids to the park this weekend.") in said
    assert elide_said("Fine by me today.", said) == "Fine by me today."  # nothing said twice: as written


def _memory(score: float, *texts: str) -> Memory:
    fragments = tuple(Fragment(id=uuid4(), conversation_id=CONV, role="user", text=t, seq=i, time=None,
                               speaker="Mel") for i, t in enumerate(texts, start=1))
    return Memory(kind="message", id=fragments[0].id, conversation_id=CONV, fragments=fragments, score=score,
                  similarity=None)


def test_memories_once_cuts_what_the_recent_turns_say_and_keeps_both_turns():
    best = _memory(0.9, "Your kind words mean a lot. We adopted a puppy named Oscar last week.")
    other = _memory(0.5, "Your kind words mean a lot, truly. Oscar loves the beach.",
                    "Thanks so much for the lovely pottery class tips. Ok!")
    recent = {key("Thanks so much for the lovely pottery class tips.")}
    chosen = {f.id for m in (best, other) for f in m.fragments}
    once = memories_once([best, other], chosen, recent)
    assert [f.text for m in once for f in m.fragments] == [
        "Your kind words mean a lot. We adopted a puppy named Oscar last week.",
        "Your kind words mean a lot, truly. Oscar loves the beach.",  # another sentence: stays whole
        "… Ok!"]  # the recent turns say the rest: the turn stays, cited, its sentence read once
    assert [f.id for m in once for f in m.fragments] == [f.id for m in (best, other) for f in m.fragments]
    assert repeated_sentences([f.text for m in once for f in m.fragments]) == 0
    assert recent == {key("Thanks so much for the lovely pottery class tips.")}  # the caller's set as it was
    assert memories_once([best], chosen, set()) is None  # nothing repeats: the section stands


def test_a_sentence_two_memory_turns_share_is_quoted_in_the_more_relevant_one():
    best = _memory(0.9, "I'm looking for some book recommendations. I started The Nightingale last week.")
    other = _memory(0.5, "Sure! I'm looking for some book recommendations. I just finished listening to The Power.")
    chosen = {f.id for m in (best, other) for f in m.fragments}
    once = memories_once([best, other], chosen, set())
    assert [f.text for m in once for f in m.fragments] == [
        "I'm looking for some book recommendations. I started The Nightingale last week.",
        "Sure! … I just finished listening to The Power."]
    assert repeated_sentences([f.text for m in once for f in m.fragments]) == 0


def test_a_turn_another_memory_says_all_of_goes():
    best = _memory(0.9, "We adopted a puppy named Oscar last week. He loves the beach.",
                   "That is wonderful news for your family!")
    again = _memory(0.7, "We adopted a puppy named Oscar last week.")  # a later session says it again
    partner = _memory(0.5, "That is wonderful news for your family!", "We take Oscar to the lake every Sunday.")
    chosen = {f.id for m in (best, again, partner) for f in m.fragments}
    once = memories_once([best, again, partner], chosen, set())
    assert [[f.text for f in m.fragments] for m in once] == [
        ["We adopted a puppy named Oscar last week. He loves the beach.", "That is wonderful news for your family!"],
        ["We take Oscar to the lake every Sunday."]]  # `again` had nothing of its own: it and its line go
    assert [m.id for m in once] == [best.id, partner.id]
