"""Lexical analysis of a search query: terms for full text, names, temporal intent.

Owns: turning a user's free text into a safe `to_tsquery` OR-expression (no user text ever
reaches tsquery syntax), spotting names of known speakers (which rarely occur in the text of
their own turns and are better used as a speaker signal), the text the dense list embeds (the
named speakers in the first person, as their own turns speak), the dates the query names as the
terms of the day a turn was said (migration 0017), and so do the relative dates it says ("last
Saturday", "two weeks ago") when the caller gives the day the question is asked (`now`; never the
wall clock: an evaluation asks at the dataset's date), questions about time, and questions about
what the assistant said (`asks_for_a_reply`). Pure; no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Iterable

from memctx.dates import RelativeDate, named_dates, relative_dates
from memctx.words import STOPWORDS, bare_words

# What carries no topic in a query: the stop words, and question scaffolding ("what did she
# say about…", "tell me…") that matches everywhere.
_FILLER = STOPWORDS | frozenset("done knew know likely mine said say take tell think thought told took type whose".split())

_TEMPORAL = re.compile(
    r"\b(when|what (?:date|day|month|year|time)|how long|how many (?:days|weeks|months|years)|"
    r"since when|which (?:year|month|day)|ago|last (?:week|month|year)|before|after)\b", re.I)


# A question about the assistant's own earlier words: "remind me of that eatery you recommended",
# "you mentioned a few apps…", "our previous conversation about…". Its answer is in a reply.
_ASKS_FOR_A_REPLY = re.compile(
    r"\byou\b[^.?!]*\b(?:told|said|recommended|suggested|mentioned|gave|listed|provided|wrote|shared|"
    r"described|explained|showed|offered)\b|\bremind me\b|"
    r"\b(?:our|the) (?:previous|last|earlier|past) (?:conversation|chat|discussion)\b", re.I)


def asks_for_a_reply(text: str) -> bool:
    """Whether the query asks what the assistant said earlier (its answer is in a reply)."""
    return _ASKS_FOR_A_REPLY.search(text) is not None


@dataclass(frozen=True)
class QueryAnalysis:
    """What the lexical stage needs from a query."""

    text: str
    terms: tuple[str, ...]  # lower-case content words, in order, without duplicates
    speakers: tuple[str, ...]  # known speaker names mentioned in the query
    temporal: bool  # the query asks when / how long
    dense_text: str  # what the dense list embeds: `text` with the named speakers in the first person

    @property
    def tsquery(self) -> str:
        """An OR of the terms, safe for to_tsquery('english', …); '' when there are none."""
        return " | ".join(self.terms)


def analyze(text: str, speakers: Iterable[str] = (), now: date | None = None) -> QueryAnalysis:
    """Split `text` into search terms; names in `speakers` become a speaker signal instead. With
    `now` (the day the query is asked), its relative dates become the terms of the days they mean."""
    known = {s.lower(): s for s in speakers if s}
    seen: dict[str, None] = {}
    named: dict[str, None] = {}
    relative = relative_dates(text, now) if now else ()
    words = text
    for found in relative:  # "10 days ago" is searched as the day it means, not as "10", "days", "ago"
        words = words.replace(found.phrase, " ")
    for lower in bare_words(words):
        if lower in known:
            named[known[lower]] = None
            continue
        if lower in _FILLER or len(lower) < 2 and not lower.isdigit():
            continue
        seen.setdefault(lower, None)
    for term in said_terms(text) + (relative_terms(relative) if relative else []):
        seen.setdefault(term, None)
    return QueryAnalysis(text=text, terms=tuple(seen), speakers=tuple(named),
                         temporal=bool(_TEMPORAL.search(text)), dense_text=first_person(text, named))


def said_terms(text: str) -> list[str]:
    """The terms that find the turns said on the dates `text` names: the lexemes every message's
    tsvector carries for the day it was said (memctx.message_tsv, migration 0017), 'm202306'
    for June 2023, 'm06' for June of any year, 'd20230603' for 3 June 2023."""
    terms = []
    for named in named_dates(text):
        terms.append(f"m{named.month:02d}" if named.year is None else f"m{named.year}{named.month:02d}")
        if named.day is not None:
            terms.append(f"d{named.year}{named.month:02d}{named.day:02d}")
    return terms


# A relative date spanning more days than this ("last month", "two years ago") is searched by its
# months ("m202306"), a shorter one ("last weekend", "last week") by its days.
DAY_TERMS = 14


def relative_terms(relative: Iterable[RelativeDate]) -> list[str]:
    """The said-date terms (see `said_terms`) of relative dates resolved against the day a query is
    asked (`memctx.dates.relative_dates`): "yesterday" asked on 4 June 2023 → 'd20230603'; "last
    month" → 'm202305'."""
    terms: list[str] = []
    for found in relative:
        days = (found.last - found.first).days + 1
        if days <= DAY_TERMS:
            terms += [f"d{found.first + timedelta(days=i):%Y%m%d}" for i in range(days)]
            continue
        month = found.first.replace(day=1)
        while month <= found.last:
            terms.append(f"m{month:%Y%m}")
            month = (month + timedelta(days=32)).replace(day=1)
    return terms


def first_person(text: str, names: Iterable[str]) -> str:
    """`text` with each of `names` in the first person ("What does Melanie do with Melanie's
    kids?" → "What does I do with my kids?"), and two of them asked about together as "we"
    ("What have both Jon and Gina lost?" → "What have we both lost?").

    A speaker's own turns say "I" and "my", never their name (the other speaker's turns do):
    embedded with the name, a question about a person comes nearest the turns addressed to them
    rather than the turns they said (docs/BENCHMARKS.md has what it brings); "we" stands for two
    names, rather than "I and I". Grammar suffers; the embedding does not mind.
    """
    names = list(names)
    for a in names:
        for b in names:
            if a != b:  # "(both) A and B", not "A and B's dog" (A, and B's dog)
                text = re.sub(rf"\b(both\s+)?{re.escape(a)}\s+and\s+{re.escape(b)}\b(?!['’]s\b)",
                              lambda m: "we both" if m.group(1) else "we", text, flags=re.I)
    for name in names:
        text = re.sub(rf"\b{re.escape(name)}['’]s\b", "my", text, flags=re.I)
        text = re.sub(rf"\b{re.escape(name)}\b", "I", text, flags=re.I)
    return text
