"""Relative dates in a turn, resolved against the day it was said. Pure; no I/O.

Owns: finding the common relative date expressions of English chat ("yesterday", "last
Saturday", "two weeks ago", "next month", "this weekend", ...) and what each means on the day the
turn was said: the days it covers, and the words a reader would use for them ("7 May 2023",
"the Saturday before 25 May 2023", "June 2023"), the way LoCoMo's annotators write the answers of
"when" questions. A weekday or a week is said relative to the day ("the Friday before 15 July
2023"), not as a computed date: "last Friday" said on a Saturday may be the day before or a week
earlier, and the relative form is right either way. What the day itself already says ("today",
"this month", "this year") is left out. Vague spans ("recently", "a few days ago") are not dates.
Also the dates a text names outright ("in June", "on 3 June, 2023"), for a query's terms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache

from memctx.summarize.text import MONTHS, WEEKDAYS, format_day

_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
            "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2}
_NUMBER = r"(?P<n>\d{1,2}|a couple of|couple of|one|two|three|four|five|six|seven|eight|nine|ten|a)"
_DAYS = {d[:3].lower(): i for i, d in enumerate(WEEKDAYS)}
_WEEKDAY = (r"(?P<weekday>monday|mon|tuesday|tues|tue|wednesday|wed|thursday|thurs|thur|thu|friday|fri|saturday|sat"
            r"|sunday|sun)")
_PAST, _NEXT = r"(?P<past>last|this past)", r"(?P<next>next|this coming)"
_WHERE = {-1: "before", 0: "of", 1: "after"}

_PATTERN = re.compile(
    r"(?<!\bthe )\b(?:(?P<before_yesterday>the day before yesterday)|(?P<after_tomorrow>the day after tomorrow)"
    r"|(?P<yesterday>yesterday|last night)|(?P<tomorrow>tomorrow)"
    rf"|{_NUMBER} (?P<unit>day|week|weekend|month|year)s? ago"
    rf"|(?:{_PAST}|{_NEXT}|(?P<this>this)) (?:{_WEEKDAY}|(?P<span>week|weekend|month|year))"
    r")\b(?!['’])", re.IGNORECASE)


@dataclass(frozen=True)
class RelativeDate:
    """One relative date expression of a turn: as written, what it means, and the days it covers."""

    phrase: str
    meaning: str
    first: date
    last: date


def _weekend(day: date, weeks: int) -> tuple[date, date]:
    """The Saturday and Sunday `weeks` weekends from `day`'s own (its week's, Monday first)."""
    saturday = day + timedelta(days=5 - day.weekday() + 7 * weeks)
    return saturday, saturday + timedelta(days=1)


def _month(day: date, months: int) -> tuple[date, date]:
    index = day.year * 12 + day.month - 1 + months
    first = date(index // 12, index % 12 + 1, 1)
    after = date((index + 1) // 12, (index + 1) % 12 + 1, 1)
    return first, after - timedelta(days=1)


def _count(text: str) -> int:
    text = text.lower()
    return int(text) if text.isdigit() else _NUMBERS[text]


def _word(n: int) -> str:
    return {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}.get(n, str(n))


def _resolve(m: re.Match, said: date) -> tuple[str, date, date] | None:
    """(meaning, first day, last day) of one match, or None when the day already says it."""
    on = format_day(said)
    if m["yesterday"] or m["before_yesterday"] or m["tomorrow"] or m["after_tomorrow"]:
        shift = -1 if m["yesterday"] else -2 if m["before_yesterday"] else 1 if m["tomorrow"] else 2
        day = said + timedelta(days=shift)
        return format_day(day), day, day
    if m["unit"]:
        n, unit = _count(m["n"]), m["unit"].lower()
        if unit == "day":
            day = said - timedelta(days=n)
            return format_day(day), day, day
        if unit == "week":
            start = said - timedelta(days=said.weekday() + 7 * n)
            return f"{_word(n)} weeks before {on}" if n > 1 else f"the week before {on}", start, start + timedelta(days=6)
        if unit == "weekend":
            first, last = _weekend(said, -n)
            return f"{_word(n)} weekends before {on}" if n > 1 else f"the weekend before {on}", first, last
        if unit == "month":
            first, last = _month(said, -n)
            return f"{MONTHS[first.month - 1]} {first.year}", first, last
        year = said.year - n
        return str(year), date(year, 1, 1), date(year, 12, 31)
    step = -1 if m["past"] else 1 if m["next"] else 0
    if m["weekday"]:
        if not step:
            return None  # "this Friday": the week's, before or after the day; the day says as much
        target = _DAYS[m["weekday"][:3].lower()]
        name = WEEKDAYS[target]
        gap = (said.weekday() - target - 1) % 7 + 1 if step < 0 else (target - said.weekday() - 1) % 7 + 1
        day = said + timedelta(days=step * gap)
        return f"the {name} {_WHERE[step]} {on}", day, day
    span = m["span"].lower()
    if span == "week":
        start = said - timedelta(days=said.weekday()) + timedelta(weeks=step)
        return f"the week {_WHERE[step]} {on}", start, start + timedelta(days=6)
    if span == "weekend":
        first, last = _weekend(said, step)
        return f"the weekend {_WHERE[step]} {on}", first, last
    if step == 0:
        return None  # "this month", "this year": the day's own
    if span == "month":
        first, last = _month(said, step)
        return f"{MONTHS[first.month - 1]} {first.year}", first, last
    year = said.year + step
    return str(year), date(year, 1, 1), date(year, 12, 31)


@lru_cache(maxsize=4096)
def relative_dates(text: str, said: date) -> tuple[RelativeDate, ...]:
    """The relative date expressions of `text`, in order, resolved against `said` (the day the
    turn was said). Cached: the same turns are rendered again and again."""
    found = []
    for m in _PATTERN.finditer(text):
        resolved = _resolve(m, said)
        if resolved is not None:
            found.append(RelativeDate(m.group(0), *resolved))
    return tuple(found)


_MONTH = "|".join(MONTHS)
_ORDINAL = r"(?:st|nd|rd|th)?"
_NAMED = re.compile(  # month names are capitalized: "may" is a verb
    rf"\b(?:(?P<day>\d{{1,2}}){_ORDINAL} (?P<month>{_MONTH})|(?P<month2>{_MONTH})(?: (?P<day2>\d{{1,2}}){_ORDINAL}\b)?)"
    r"(?:,? (?P<year>(?:19|20)\d\d)\b)?")


@dataclass(frozen=True)
class NamedDate:
    """A date a text names: a month, of a year when it says one, on a day when it says one."""

    month: int
    year: int | None = None
    day: int | None = None


def named_dates(text: str) -> tuple[NamedDate, ...]:
    """The dates `text` names ("in June", "June 2023", "on 3 June, 2023", "May 3rd, 2023"), in order.
    A day without a year is taken as its month only."""
    found = []
    for m in _NAMED.finditer(text):
        month = MONTHS.index(m["month"] or m["month2"]) + 1
        year = int(m["year"]) if m["year"] else None
        day = m["day"] or m["day2"]
        found.append(NamedDate(month, year, int(day) if day and year and 1 <= int(day) <= 31 else None))
    return tuple(found)
