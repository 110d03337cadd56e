"""Relative dates resolved against the day a turn was said, and the note a memory line carries."""

from __future__ import annotations

from datetime import date, datetime, timezone
from uuid import uuid4

import pytest

from memctx.assemble.render import turn_line
from memctx.dates import NamedDate, named_dates, relative_dates
from memctx.retrieve.lexical import analyze
from memctx.retrieve.types import Fragment

THURSDAY = date(2023, 5, 25)


@pytest.mark.parametrize("text, meaning, first, last", [
    ("I went to a support group yesterday.", "24 May 2023", date(2023, 5, 24), date(2023, 5, 24)),
    ("Last night was amazing!", "24 May 2023", date(2023, 5, 24), date(2023, 5, 24)),
    ("The opening night is tomorrow.", "26 May 2023", date(2023, 5, 26), date(2023, 5, 26)),
    ("I saw it the day before yesterday", "23 May 2023", date(2023, 5, 23), date(2023, 5, 23)),
    ("I went to a conference two days ago", "23 May 2023", date(2023, 5, 23), date(2023, 5, 23)),
    ("I ran a charity race last Saturday", "the Saturday before 25 May 2023", date(2023, 5, 20), date(2023, 5, 20)),
    ("Last Fri I took my kids to a workshop", "the Friday before 25 May 2023", date(2023, 5, 19), date(2023, 5, 19)),
    ("I joined a group last Tues.", "the Tuesday before 25 May 2023", date(2023, 5, 23), date(2023, 5, 23)),
    ("We meet next Monday", "the Monday after 25 May 2023", date(2023, 5, 29), date(2023, 5, 29)),
    ("I gave a talk last week", "the week before 25 May 2023", date(2023, 5, 15), date(2023, 5, 21)),
    ("Guess what I did this week?", "the week of 25 May 2023", date(2023, 5, 22), date(2023, 5, 28)),
    ("We start next week", "the week after 25 May 2023", date(2023, 5, 29), date(2023, 6, 4)),
    ("It crashed two weeks ago", "two weeks before 25 May 2023", date(2023, 5, 8), date(2023, 5, 14)),
    ("Last weekend I joined a program", "the weekend before 25 May 2023", date(2023, 5, 20), date(2023, 5, 21)),
    ("that roadtrip this past weekend", "the weekend before 25 May 2023", date(2023, 5, 20), date(2023, 5, 21)),
    ("We're hiking this weekend", "the weekend of 25 May 2023", date(2023, 5, 27), date(2023, 5, 28)),
    ("we went camping two weekends ago", "two weekends before 25 May 2023", date(2023, 5, 13), date(2023, 5, 14)),
    ("We're going camping next month", "June 2023", date(2023, 6, 1), date(2023, 6, 30)),
    ("Last month I got hurt", "April 2023", date(2023, 4, 1), date(2023, 4, 30)),
    ("I read it last year", "2022", date(2022, 1, 1), date(2022, 12, 31)),
    ("A friend made it ten years ago", "2013", date(2013, 1, 1), date(2013, 12, 31)),
    ("about a year ago", "2022", date(2022, 1, 1), date(2022, 12, 31)),
])
def test_a_relative_date_means_what_it_meant_on_the_day_it_was_said(text, meaning, first, last):
    (found,) = relative_dates(text, THURSDAY)
    assert (found.meaning, found.first, found.last) == (meaning, first, last)
    assert found.phrase.lower() in text.lower()


def test_what_the_day_already_says_and_vague_spans_are_not_dates():
    for text in ("I'm going to a conference this month", "This year has been wild", "I did it today",
                 "I'll see you this Friday", "I took a class recently", "a few days ago", "over the past year",
                 "the last weekend of the month was fun"):
        assert relative_dates(text, THURSDAY) == (), text


def test_months_and_years_roll_over():
    assert relative_dates("see you next month", date(2023, 12, 30))[0].meaning == "January 2024"
    assert relative_dates("last month was hard", date(2023, 1, 3))[0].meaning == "December 2022"
    # "last Friday" said on a Saturday is the day before; said on a Friday, a week before
    assert relative_dates("last Friday", date(2023, 7, 15))[0].first == date(2023, 7, 14)
    assert relative_dates("last Friday", date(2023, 7, 14))[0].first == date(2023, 7, 7)


def test_a_memory_line_keeps_the_turn_verbatim_and_notes_its_dates_after_it():
    text = "I went to a support group yesterday, and we go camping next month."
    fragment = Fragment(id=uuid4(), conversation_id=uuid4(), role="user", text=text, seq=3,
                        time=datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc), speaker="Caroline")
    assert turn_line(fragment) == f"Caroline: {text} (yesterday = 7 May 2023; next month = June 2023)"
    plain = Fragment(id=uuid4(), conversation_id=uuid4(), role="user", text="Hello there!", seq=4,
                     time=datetime(2023, 5, 8, tzinfo=timezone.utc), speaker="Caroline")
    assert turn_line(plain) == "Caroline: Hello there!"


@pytest.mark.parametrize("question, dates, terms", [
    ("When did Melanie go camping in June?", (NamedDate(6),), ["m06"]),
    ("What did Maria donate in December 2023?", (NamedDate(12, 2023),), ["m202312"]),
    ("What did Gina find on 1 February, 2023?", (NamedDate(2, 2023, 1),), ["m202302", "d20230201"]),
    ("Who did Maria have dinner with on May 3, 2023?", (NamedDate(5, 2023, 3),), ["m202305", "d20230503"]),
    ("What painting did she show on October 13th, 2023?", (NamedDate(10, 2023, 13),), ["m202310", "d20231013"]),
    ("When is her daughter's birthday, 13 August?", (NamedDate(8),), ["m08"]),
    ("What may happen in 2023?", (), []),
])
def test_the_dates_a_question_names_become_the_terms_of_the_day_a_turn_was_said(question, dates, terms):
    assert named_dates(question) == dates
    analysis = analyze(question, ["Melanie", "Maria", "Gina"])
    assert list(analysis.terms[-len(terms):] if terms else ()) == terms
    assert all(t in analysis.tsquery for t in terms)
