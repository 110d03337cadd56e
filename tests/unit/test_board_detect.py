"""The board's key-free detectors on sentences they once got wrong, and on the ones they must keep."""

from __future__ import annotations

import pytest

from memctx.summarize import detect


@pytest.mark.parametrize("sentence", [
    "Never had a chance to visit it.", "Always here to help.", "Never give up!",
    "I'll never forget that day.", "I never want to go through this again.",
    "Not easy facing setbacks but I believe in you.",
])
def test_never_always_and_cheering_are_not_constraints(sentence):
    assert not detect.is_constraint(sentence)


@pytest.mark.parametrize("sentence", [
    "I prefer tea over coffee.", "Please don't call me after 9 pm.", "Never call me Caro.",
    "I never eat meat.", "I'm allergic to most reptiles and animals with fur.", "My favorite book is Dune.",
    "Harry Potter is my favorite book.", "I'm not really into hiking.", "I'm a big fan of Nintendo games.",
    "From now on, send the reports on Mondays.", "Actually, my daughter's name is Anna, not Anne.",
])
def test_stated_preferences_rules_and_corrections_are_constraints(sentence):
    assert detect.is_constraint(sentence)


@pytest.mark.parametrize("sentence", [
    "Actually I'm vegetarian now.", "No, the budget is 2,000.", "I meant Tuesday, not Monday.",
    "Sorry, I meant the 5th.", "Scratch that, we're meeting at noon.",
])
def test_corrections(sentence):
    assert detect.is_correction(sentence) and detect.is_constraint(sentence)


@pytest.mark.parametrize("sentence", [
    "I'm gonna make it!", "I'll keep going!", "Let's make tomorrow unforgettable, Gina.",
    "Let's keep spreading the love and making a difference.", "I'll do my best!", "I'll keep you posted.",
    "Maybe I'll go back to acting someday.", "Tomorrow's gonna be an awesome night.", "I'll see you soon!",
    "Book it!", "Order me whatever you like.",
])
def test_encouragement_and_vague_resolve_are_not_action_items(sentence):
    assert not detect.is_action(sentence)


@pytest.mark.parametrize("sentence", [
    "I'll send you the photos tomorrow.", "Remind me to call the vet.", "Let's meet at 6 at the cafe.",
    "I need to renew my passport.", "I'm going to a transgender conference this month.",
    "I'm definitely going to check it out!", "I'll let you know how it turns out.",
    "I'm planning a ring-toss tournament for the fundraiser.", "Thanks! I'll send you the recipe.",
    "Can you remind me to book the Oceanarium tickets?",
    "Order more butter from Laticínios Serra on Wednesday — we need at least 10 kg.", "Book the 9:40 train to Sintra.",
])
def test_an_actor_with_a_concrete_act_is_an_action_item(sentence):
    assert detect.is_action(sentence)


@pytest.mark.parametrize("sentence", [
    "No doubt, Jon you've got this.", "Yeah, same here Caroline.", "Thanks, Gina - really appreciate your words!",
    "You're doing great with the studio.", "Gotta focus on success and why I started.",
])
def test_cheering_thanks_and_advice_are_not_key_facts(sentence):
    assert not detect.is_key_fact(sentence)


@pytest.mark.parametrize("sentence", [
    "Since I lost my job at Door Dash, things have been tough.", "I adopted a dog named Max in May.",
    "I went to a LGBTQ support group yesterday and it was so powerful.", "My sister lives in Denver.",
])
def test_what_the_speaker_did_or_has_is_a_key_fact(sentence):
    assert detect.is_key_fact(sentence)


@pytest.mark.parametrize("sentence", [
    "I'm planning a week in Lisbon with my partner Tomás in late May.", "One more thing: Tomás's birthday is on 28 May.",
    "We land on 24 May at 9:40 and fly home on 31 May.", "Budget is about 1,800 euros for the two of us.",
    "Each batch of croissants uses 2 kg flour, 1.2 kg butter and 10 eggs.",
])
def test_a_fact_stated_outright_is_a_key_fact(sentence):
    """A relative named, a named person's dated thing, a dated schedule, a quantity: no past event."""
    assert detect.is_key_fact(sentence)


@pytest.mark.parametrize("sentence", [
    "That is 7 nights.", "It was 3 hours of fun!", "Melanie's kids are so cute.", "We land soon, I think.",
])
def test_a_pronoun_a_verdict_or_no_day_is_not_a_stated_fact(sentence):
    assert not detect.is_key_fact(sentence)


def test_a_plan_told_with_its_facts_is_a_key_fact_not_an_action_item():
    assert not detect.is_action("I'm planning a week in Lisbon with my partner Tomás in late May.")
    assert detect.is_action("I'm planning a ring-toss tournament for the fundraiser.")  # a plan alone: a task


@pytest.mark.parametrize("sentence,clause", [
    ("Yeah, Jon! I visited Paris in May - it was so cool.", "I visited Paris in May"),
    ("Unfortunately, I also lost my job at the bakery this month.", "I also lost my job at the bakery this month"),
    ("Hey, it's been ages, but wanted to let you know I joined a choir!", "I joined a choir"),
    ("Last Friday I went to a pottery workshop and it was really relaxing.", "Last Friday I went to a pottery workshop"),
    ("I moved to Oslo in May, which was a big step.", "I moved to Oslo in May"),
    ("Guess what - I got a puppy two weeks ago!", "I got a puppy two weeks ago"),
])
def test_the_fact_clause_drops_openers_asides_and_verdicts_and_keeps_the_fact(sentence, clause):
    assert detect.fact_clause(sentence) == clause


def test_a_verdict_stays_when_nothing_else_is_a_fact():
    assert detect.fact_clause("My trip to Rome in 2019 was amazing.") == "My trip to Rome in 2019 was amazing"


@pytest.mark.parametrize("sentence", [
    "My team is like my second family.", "My goal is to get 200 people to sign the petition.",
    "Seeing my students perform in 2022 was my favorite part.",
])
def test_similes_goals_and_favourite_parts_are_not_key_facts(sentence):
    assert not detect.is_key_fact(sentence)


@pytest.mark.parametrize("sentence,asks", [
    ("Where did you go in May?", True), ("Any upcoming tournaments?", True), ("How are you?", False),
    ("Hey Mel, how have you been?", False), ("Nature is calming, huh?", False), ("It was great, right?", False),
])
def test_greetings_and_tag_questions_ask_nothing(sentence, asks):
    assert detect.is_question(sentence) is asks
