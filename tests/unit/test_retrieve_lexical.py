"""Query analysis: the text the dense list embeds."""

import pytest

from memctx.retrieve.lexical import analyze, asks_for_a_reply, first_person


def test_a_named_speaker_is_asked_about_in_the_first_person_as_their_own_turns_speak():
    a = analyze("What do Melanie's kids like, and what does Melanie paint?", ["Caroline", "Melanie"])
    assert a.dense_text == "What do my kids like, and what does I paint?"
    assert a.text == "What do Melanie's kids like, and what does Melanie paint?"  # full text and display keep it
    assert a.speakers == ("Melanie",)


def test_first_person_replaces_whole_names_only_in_any_case_and_either_apostrophe():
    assert first_person("Did CAROLINE and melanie’s dog meet Anabel?", ["Caroline", "Melanie", "Ana"]) \
        == "Did I and my dog meet Anabel?"


def test_two_speakers_asked_about_together_are_we():
    speakers = ["Gina", "Jon"]
    assert analyze("What do Jon and Gina both have in common?", speakers).dense_text \
        == "What do we both have in common?"
    assert analyze("What movies have both Gina and jon seen?", speakers).dense_text == "What movies have we both seen?"
    # each on their own, or one and the other's dog, stay first persons
    assert first_person("Did Jon meet Gina?", speakers) == "Did I meet I?"
    assert first_person("Did Jon and Gina's dog meet?", speakers) == "Did I and my dog meet?"


def test_a_query_naming_no_speaker_is_embedded_as_it_is():
    text = "What  breed is the dog?"
    assert analyze(text, ["Ana", "Ben"]).dense_text == text
    assert analyze(text).dense_text == text


def test_relative_dates_of_a_query_are_searched_as_the_days_they_mean_only_given_the_day_it_is_asked():
    from datetime import date

    question = "What did I buy last Saturday, and where did I travel last month?"
    asked = analyze(question, now=date(2023, 6, 17))  # a Saturday
    assert "d20230610" in asked.terms and "m202305" in asked.terms
    assert "d20230617" not in asked.terms  # not the day it is asked
    assert not any(t.startswith(("d2", "m2")) for t in analyze(question).terms)  # no wall clock
    # "two weeks ago": every day of that week, no month term for a span this short
    week = analyze("How many books did I read two weeks ago?", now=date(2023, 6, 17)).terms
    assert [t for t in week if t.startswith("d")] == [f"d202305{d:02d}" for d in range(29, 32)] + [
        f"d202306{d:02d}" for d in range(1, 5)]


def test_the_words_of_a_resolved_relative_date_are_not_searched_as_words():
    from datetime import date

    question = "What kitchen appliance did I buy 10 days ago?"
    asked = analyze(question, now=date(2023, 3, 25)).terms
    assert asked == ("kitchen", "appliance", "buy", "d20230315")  # "10", "days", "ago" match everything
    assert {"10", "days", "ago"} <= set(analyze(question).terms)  # unresolved, they are all the query has


@pytest.mark.parametrize("query", [
    "I'm planning another trip to New York. Can you remind me of that vegan eatery you recommended?",
    "You mentioned a few language apps last week. Which one had offline lessons?",
    "I was going through our previous conversation about binaural beats: how many subjects were in the study?",
    "What was the name of the book you suggested for my flight?",
])
def test_a_question_about_the_assistants_earlier_words_asks_for_a_reply(query):
    assert asks_for_a_reply(query)


@pytest.mark.parametrize("query", [
    "When did Caroline go to the LGBTQ support group?",
    "What did Melanie say about her kids?",
    "How many music albums have I bought?",
    "Did you know that I moved to Lisbon? Where should I eat tonight?",
])
def test_a_question_about_the_user_or_others_does_not(query):
    assert not asks_for_a_reply(query)
