"""Whether a query needs the web: keyword rules, the conversation's own answer, a small LLM.

Owns: the decision and its reason. The keyword rules score the query (temporal words, information
requests, named things the conversation has not mentioned, minus references to the conversation's
people); a strong memory hit on the query's named things means the conversation can answer, so
nothing goes to the web; when no rule fires at all, an optional small LLM answers yes or no.
Pure except the optional LLM call; it never searches and never writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Callable, Iterable, Sequence

from memctx.web.types import Decision

TEMPORAL = ("latest", "current", "currently", "recent", "today", "now", "this week", "this month", "this year",
            "tonight", "yesterday", "breaking", "upcoming")
REQUESTS = ("what is", "what's", "what are", "who is", "who's", "who are", "tell me about", "find", "look up",
            "search for", "price of", "how much is", "how much does")
# A capitalized word that opens a question or a request is not part of a name.
_NOT_NAMES = {"what", "who", "whom", "whose", "when", "where", "why", "how", "which", "is", "are", "was", "were",
              "do", "does", "did", "can", "could", "would", "should", "will", "tell", "find", "search", "look",
              "please", "the", "a", "an", "i", "hi", "hey", "and", "or", "but", "in", "on", "at", "of", "for",
              "to", "my", "our", "your", "me", "show", "give", "list", "compare", "explain", "has", "have", "had"}
_WORD = r"[A-Z][\w&'’.-]*"
_NAME = re.compile(rf"\b{_WORD}(?:\s+{_WORD})+")
_COMPANY = re.compile(rf"\b({_WORD}(?:\s+{_WORD})*)\s+(Inc|Ltd|LLC|Corp|Corporation|GmbH|AG|PLC|SA|SE|Co)\b\.?")
_VERSION = re.compile(r"\b(?:[A-Za-z][\w.+-]*\s+v?\d+(?:\.\d+)+|v\d+(?:\.\d+)+|\d+\.\d+\.\d+)\b")
_YEAR = re.compile(r"\b(19\d\d|20\d\d|21\d\d)\b")
_PERSONAL = re.compile(r"\b(my|mine|me|we|our|us|you|your|yours|i)\b")
# Polite forms of a request are not about the user or the assistant.
_POLITE = re.compile(r"\b(tell me|show me|give me|let me know|can you|could you|would you|will you|"
                     r"can i|could i|please)\b")

# Rule weights: a temporal word or an unseen named thing alone reaches the default threshold (1.0);
# an information request alone does not ("what is your favourite colour?"), with either it does.
W_TEMPORAL = 1.0
W_REQUEST = 0.5
W_UNSEEN = 1.0
W_PEOPLE = -1.0  # the query names one of the conversation's people
W_PERSONAL = -0.5  # first or second person: about the user or the assistant

MEMORY_TOP = 3  # a memory hit this high that covers every named thing answers the query


@dataclass(frozen=True)
class Score:
    """The keyword rules on one query: total, the rules that fired, its named things."""

    total: float
    rules: tuple[str, ...]
    entities: tuple[str, ...]


def entities(query: str) -> tuple[str, ...]:
    """The named things of a query: capitalized multi-word names, company names, version numbers."""
    found: list[str] = []
    for m in _COMPANY.finditer(query):
        found.append(_strip_lead(m.group(0).rstrip(".")))
    for m in _VERSION.finditer(query):
        found.append(_strip_lead(m.group(0)))
    for m in _NAME.finditer(query):
        name = _strip_lead(m.group(0).rstrip(".’'"))
        if " " in name:
            found.append(name)
    out: list[str] = []
    for name in found:  # longest first, and no name inside another
        if name and not any(name.lower() in other.lower() for other in out):
            out = [o for o in out if o.lower() not in name.lower()] + [name]
    return tuple(out)


def _strip_lead(name: str) -> str:
    words = name.split()
    while words and words[0].lower().strip("'’") in _NOT_NAMES:
        words.pop(0)
    while words and words[-1].lower().strip("'’") in _NOT_NAMES:
        words.pop()
    return " ".join(words)


def keyword_score(query: str, *, known: str = "", people: Sequence[str] = (), today: date | None = None) -> Score:
    """Score `query` against the rules; `known` is the conversation's text (lowercased or not),
    `people` its speakers' names."""
    lowered = " " + re.sub(r"\s+", " ", query.lower()) + " "
    known = known.lower()
    rules: list[str] = []
    total = 0.0
    temporal = [w for w in TEMPORAL if re.search(rf"\b{re.escape(w)}\b", lowered)]
    year = (today or date.today()).year
    temporal += [y for y in _YEAR.findall(query) if int(y) >= year]
    if temporal:
        total += W_TEMPORAL
        rules.append(f"temporal {', '.join(repr(t) for t in temporal)} (+{W_TEMPORAL:g})")
    requests = [r for r in REQUESTS if re.search(rf"(^|\W){re.escape(r)}\b", lowered)]
    if requests:
        total += W_REQUEST
        rules.append(f"information request {requests[0]!r} (+{W_REQUEST:g})")
    named = entities(query)
    people_l = {p.lower() for p in people if p}
    unseen = [e for e in named if e.lower() not in known and not (set(e.lower().split()) & people_l)]
    if unseen:
        total += W_UNSEEN
        rules.append(f"named {', '.join(repr(e) for e in unseen)} not in the conversation (+{W_UNSEEN:g})")
    mentioned = sorted(p for p in people if p and re.search(rf"\b{re.escape(p.lower())}\b", lowered))
    if mentioned:
        total += W_PEOPLE
        rules.append(f"names the conversation's {', '.join(mentioned)} ({W_PEOPLE:g})")
    if _PERSONAL.search(_POLITE.sub(" ", lowered)):
        total += W_PERSONAL
        rules.append(f"personal ({W_PERSONAL:g})")
    return Score(round(total, 3), tuple(rules), named)


def memory_answer(named: Sequence[str], memories: Iterable[str]) -> str | None:
    """The first of the top memory texts that mentions every named thing of the query, or None."""
    if not named:
        return None
    for text in list(memories)[:MEMORY_TOP]:
        lowered = text.lower()
        if all(e.lower() in lowered for e in named):
            return text
    return None


YesNo = Callable[[str], tuple[bool, str]]


def decide(query: str, *, threshold: float, known: str = "", people: Sequence[str] = (),
           memories: Sequence[str] = (), slm: YesNo | None = None, today: date | None = None) -> Decision:
    """The decision for `query`. `memories` are the memory search's texts, best first."""
    score = keyword_score(query, known=known, people=people, today=today)
    fired = "; ".join(score.rules) or "no rule fired"
    if score.total >= threshold:
        hit = memory_answer(score.entities, memories)
        if hit is not None:
            return Decision(False, f"the conversation can answer: a top memory mentions "
                                   f"{', '.join(score.entities)} ({fired})", "memory", score.total, score.rules,
                            score.entities)
        return Decision(True, f"{fired} = {score.total:g} ≥ {threshold:g}", "keyword", score.total, score.rules,
                        score.entities)
    if not score.rules and slm is not None:
        yes, why = slm(query)
        return Decision(yes, f"no rule fired; small LLM: {why}", "slm", score.total, score.rules, score.entities)
    return Decision(False, f"{fired} = {score.total:g} < {threshold:g}", "keyword", score.total, score.rules,
                    score.entities)
