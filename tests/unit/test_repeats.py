"""Counting and leaving out repeated sentences across the sections of a context."""

from memctx.assemble.repeats import key, repeated_sentences, sentences, strip_said


def test_a_sentence_is_the_same_whoever_says_it_and_whatever_frames_it():
    texts = ["Priya: I'll buy the Pena Palace tickets tonight.",
             "- user: I'll buy the Pena Palace tickets tonight!",
             "[2 March 2026] I’ll buy the Pena Palace tickets tonight"]
    assert len({key(t) for t in texts}) == 1
    assert repeated_sentences(texts) == 2


def test_short_sentences_dates_and_names_may_repeat():
    assert repeated_sentences(["Priya: Thanks!", "Guide: Thanks!", "[2 March 2026]", "[2 March 2026]"]) == 0
    assert key("We land on 24 May at 9:40.") == "we land on 24 may at 9 40"


def test_strip_said_keeps_what_is_new_in_order_and_remembers_it():
    said = {key("Tomás is vegetarian, and I don't eat shellfish.")}
    text = "Priya planned a week in Lisbon with Tomás. Tomás is vegetarian, and I don't eat shellfish.\nuser: Ok."
    assert strip_said(text, said) == "Priya planned a week in Lisbon with Tomás.\nuser: Ok."
    assert strip_said("Priya planned a week in Lisbon with Tomás.", said) == ""
    assert sentences("One. Two three? Four\nfive") == ["One.", "Two three?", "Four", "five"]
