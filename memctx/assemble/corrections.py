"""A correction supersedes: what the board knows was corrected is not shown as current.

Owns: reading the corrections among the board's constraints (a line `detect.is_correction` calls
one, with its person and source turns) and finding, among the statements a context would show,
the one each corrects: said earlier by the same person, the one sharing most of its words or
their slot (a date, an amount, a diet) — the board's own rule (`board.supersede`), applied to
the sentences of summaries and the turns of memories. The context then leaves those sentences out
of its summaries and marks those turns "(replaced on <date> by: …)". Pure; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from memctx.assemble.repeats import key, sentences
from memctx.summarize import detect
from memctx.summarize.board import said_slots
from memctx.summarize.text import format_day
from memctx.summarize.types import BoardItem, unprefixed


@dataclass(frozen=True)
class Correction:
    who: str
    text: str  # what the person said, without "Name: "
    sources: frozenset[int | str]  # the ids of the turns it came from
    slots: frozenset[str]


@dataclass(frozen=True)
class Statement:
    """A sentence the context would show: who said it, and the turn (id, seq) when known."""

    who: str | None
    text: str
    turn: int | str | None = None  # the turn's id, as the corrections' sources name it
    seq: int | None = None


def corrections_of(items: Any) -> list[Correction]:
    """The corrections among a stored board section's items. Only a correction's sources are
    read: the rest is decided on its text and person (`_correcting`, cached)."""
    out: list[Correction] = []
    for raw in items or []:
        text = BoardItem.text_of(raw)
        if text is None:
            continue
        group = raw.get("group") if isinstance(raw, Mapping) else None
        if _correcting(text, str(group) if group else None) is None:
            continue
        item = unprefixed(BoardItem.from_json(raw))
        out.append(Correction(item.group, item.text, frozenset(str(s.id) for s in item.sources),
                              frozenset(said_slots(item.text))))
    return out


@lru_cache(maxsize=4_096)
def _correcting(text: str, group: str | None) -> str | None:
    """The person of a board item (its `text` and `group`) that corrects, None when it does not
    (cached: a board's constraints are read on every call)."""
    item = unprefixed(BoardItem(text, group=group))
    return item.group if item.group and detect.is_correction(item.text) else None


@lru_cache(maxsize=4_096)
def summary_statements(text: str) -> tuple[Statement, ...]:
    """The sentences of a summary, each with the person its line names ("Name: …") (cached:
    summaries recur on every call)."""
    out: list[Statement] = []
    for line in text.split("\n"):
        head, sep, rest = line.partition(": ")
        who = head.strip() if sep and 0 < len(head) <= 60 and not head.startswith("[") else None
        out += [Statement(who, s) for s in sentences(rest if who else line)]
    return tuple(out)


def superseded(corrections: Sequence[Correction], statements: Iterable[Statement],
               seqs: Mapping[int | str, int]) -> tuple[set[str], dict[int | str, Correction]]:
    """What the corrections replace among `statements`: the sentence keys to leave out, and the
    turns (by id) to mark, with the correction that replaced each. `seqs` holds the seq of the
    turns known to the context, so a statement said after its correction is never replaced."""
    pool = list(statements)
    keys: set[str] = set()
    turns: dict[int | str, Correction] = {}
    for correction in corrections:
        at = min((seqs[s] for s in correction.sources if s in seqs), default=None)
        scored = []
        for st in pool:
            if st.who != correction.who or (st.turn and st.turn in correction.sources):
                continue
            if st.seq is not None and at is not None and st.seq >= at:
                continue
            k = key(st.text)
            if k is None:
                continue
            overlap = len(correction.slots & _slots(st.text))
            if overlap and not _corrects(st.text):  # a correction itself is never replaced
                scored.append((overlap, k, st))
        if not scored:
            continue
        best = max(s[0] for s in scored)
        # Copies of the one statement (its turn, and summaries quoting it) all go; the first of
        # the best-sharing sentences is the one the correction replaces.
        chosen = next(k for overlap, k, _ in scored if overlap == best)
        keys.add(chosen)
        turns.update({st.turn: correction for _, k, st in scored if k == chosen and st.turn})
    return keys, turns


def shares_slot(sentence: str, slots: frozenset[str]) -> bool:
    """Whether `sentence` has a word in one of `slots` (the union of a person's corrections'):
    only such a sentence can be one a correction replaces (`superseded` weighs the rest at 0)."""
    return not _slots(sentence).isdisjoint(slots)


@lru_cache(maxsize=65_536)
def _slots(sentence: str) -> frozenset[str]:
    """A sentence's words by slot (cached: the same turns are weighed for every correction and on
    every call)."""
    return frozenset(said_slots(sentence))


@lru_cache(maxsize=65_536)
def _corrects(sentence: str) -> bool:
    """Whether a sentence is a correction itself (cached, as `_slots`; asked only of the sentences
    that share a slot with a correction)."""
    return detect.is_correction(sentence)


@lru_cache(maxsize=65_536)
def turn_sentences(text: str) -> tuple[str, ...]:
    """The sentences of a turn (cached, as `_slots`)."""
    return tuple(sentences(text))


def replaced_note(correction: Correction, when: datetime | None) -> str:
    """What follows a replaced turn: " (replaced on 2 March 2026 by: Actually, …)"."""
    on = f" on {format_day(when)}" if when else ""
    return f" (replaced{on} by: {correction.text})"
