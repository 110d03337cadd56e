"""Lexical analysis of a search query: terms for full text, names, temporal intent.

Owns: turning a user's free text into a safe `to_tsquery` OR-expression (no user text ever
reaches tsquery syntax), spotting names of known speakers (which rarely occur in the text of
their own turns and are better used as a speaker signal) and questions about time. Pure; no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")

# Question scaffolding that matches everywhere and carries no topic. Postgres' english
# configuration drops its own stop words; these are the frequent ones it keeps.
_FILLER = frozenset("""
what when where who whom whose which why how did does do done doing is are was were be been
has have had will would could should can may might shall must the a an of to in on at for with
by from about into over after before during than then there their they them this that these
those it its he she his her hers him you your yours we our us i me my mine and or not no yes
also any some many much more most very just like likely kind sort type thing things something
get got go went gone make made take took say said tell told think thought know knew
""".split())

_TEMPORAL = re.compile(
    r"\b(when|what (?:date|day|month|year|time)|how long|how many (?:days|weeks|months|years)|"
    r"since when|which (?:year|month|day)|ago|last (?:week|month|year)|before|after)\b", re.I)


@dataclass(frozen=True)
class QueryAnalysis:
    """What the lexical stage needs from a query."""

    text: str
    terms: tuple[str, ...]  # lower-case content words, in order, without duplicates
    speakers: tuple[str, ...]  # known speaker names mentioned in the query
    temporal: bool  # the query asks when / how long

    @property
    def tsquery(self) -> str:
        """An OR of the terms, safe for to_tsquery('english', …); '' when there are none."""
        return " | ".join(self.terms)


def words(text: str) -> list[str]:
    return [w.split("'")[0] for w in _WORD.findall(text)]


def analyze(text: str, speakers: Iterable[str] = ()) -> QueryAnalysis:
    """Split `text` into search terms; names in `speakers` become a speaker signal instead."""
    known = {s.lower(): s for s in speakers if s}
    seen: dict[str, None] = {}
    named: dict[str, None] = {}
    for word in words(text):
        lower = word.lower()
        if lower in known:
            named[known[lower]] = None
            continue
        if lower in _FILLER or len(lower) < 2 and not lower.isdigit():
            continue
        seen.setdefault(lower, None)
    return QueryAnalysis(text=text, terms=tuple(seen), speakers=tuple(named),
                         temporal=bool(_TEMPORAL.search(text)))
