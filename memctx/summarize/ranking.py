"""Extractive selection: rank sentence units and pick the best set that fits a token budget.

Owns: TF-IDF centrality, cue boosts, MMR selection with per-source coverage, rendering in the
original order under a date header, and the hard guarantee that the text fits `max_tokens`.
Deterministic: no randomness, and ties go to the earlier sentence. Pure Python and numpy; it
must not call a model or the database.

How a sentence scores: (0.2 + cosine of its TF-IDF vector to the centroid) times a boost for
names (+0.3, two or more +0.45), numbers (+0.3), dates (+0.3, relative ones like "yesterday"
+0.15), preferences and corrections (+0.6) and first-person facts (+0.2); questions ×0.8,
fragments under 4 words ×0.5, under 7 words ×0.8. In the centroid every source weighs the
same and a sentence repeated within a source counts once. Small talk ("Thanks!", "lol ok") is
not selected while anything else is left. Selection: explicit preferences and corrections ("I
prefer", "please don't", "actually, …", "I meant") first, best first, within half the budget;
then greedy MMR: 0.7 × normalized score − 0.3 × the highest cosine to a chosen sentence + 0.15
if its source has nothing chosen yet; near-duplicates (cosine ≥ 0.92) are skipped.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import Hashable, Sequence, cast

import numpy as np

from memctx.summarize.text import Unit, cues, format_day, format_span, source_days, terms, units_of
from memctx.summarize.types import SourceText
from memctx.tokens import TokenCounter

LAMBDA = 0.7
COVERAGE_BONUS = 0.15
DUPLICATE_SIM = 0.92
_CJK_STOPS = ("。", "！", "？", "」", "』")


@dataclass(frozen=True)
class TfIdf:
    """Sublinear TF-IDF vectors of sentences, L2-normalized, stored row-compressed."""

    indptr: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    n: int
    dim: int

    @classmethod
    def build(cls, term_lists: Sequence[Sequence[str]]) -> "TfIdf":
        vocab: dict[str, int] = {}
        cols: list[int] = []
        counts: list[int] = []
        indptr = [0]
        for row_terms in term_lists:
            for term, count in Counter(row_terms).items():
                cols.append(vocab.setdefault(term, len(vocab)))
                counts.append(count)
            indptr.append(len(cols))
        n, dim = len(term_lists), len(vocab)
        ptr = np.asarray(indptr, dtype=np.int64)
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
        col = np.asarray(cols, dtype=np.int64)
        df = np.bincount(col, minlength=dim)
        idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
        vals = (1.0 + np.log(np.asarray(counts, dtype=np.float64))) * idf[col]
        norms = np.sqrt(np.bincount(rows, weights=vals * vals, minlength=n))
        vals = vals / np.where(norms > 0, norms, 1.0)[rows]
        return cls(ptr, rows, col, vals, n, dim)

    def centrality(self, weights: np.ndarray) -> np.ndarray:
        """Cosine of each sentence to the weighted centroid of all sentences."""
        centroid = np.bincount(self.cols, weights=self.vals * weights[self.rows], minlength=self.dim)
        norm = float(np.sqrt(centroid @ centroid))
        if norm == 0.0:
            return np.zeros(self.n)
        return np.bincount(self.rows, weights=self.vals * (centroid / norm)[self.cols], minlength=self.n)

    def similarity_to(self, i: int) -> np.ndarray:
        """Cosine of every sentence to sentence `i`."""
        dense = np.zeros(self.dim)
        lo, hi = self.indptr[i], self.indptr[i + 1]
        dense[self.cols[lo:hi]] = self.vals[lo:hi]
        return np.bincount(self.rows, weights=self.vals * dense[self.cols], minlength=self.n)


def cue_boost(text: str) -> float:
    """How much a sentence's surface cues raise its score (see the module docstring)."""
    c = cues(text)
    boost = 1.0
    if c.names:
        boost += 0.3 if c.names == 1 else 0.45
    if c.number:
        boost += 0.3
    if c.date:
        boost += 0.3 if c.absolute_date else 0.15
    if c.constraint:
        boost += 0.6
    if c.fact:
        boost += 0.2
    if c.question:
        boost *= 0.8
    if c.size < 4:
        boost *= 0.5
    elif c.size < 7:
        boost *= 0.8
    return boost


def centroid_weights(units: Sequence[Unit], term_lists: Sequence[Sequence[str]]) -> np.ndarray:
    """Each source weighs the same in the centroid, and a sentence repeated within a source
    counts once: repetition and long sources must not make themselves central."""
    keys = [(u.source, tuple(t)) for u, t in zip(units, term_lists, strict=True)]
    repeats = Counter(keys)
    distinct = Counter(source for source, _ in repeats)
    return np.array([1.0 / (repeats[k] * distinct[k[0]] * len(distinct)) for k in keys], dtype=np.float64)


def score_units(units: Sequence[Unit], term_lists: Sequence[Sequence[str]]) -> tuple[np.ndarray, TfIdf]:
    tfidf = TfIdf.build(term_lists)
    boosts = np.fromiter((cue_boost(u.text) for u in units), dtype=np.float64, count=len(units))
    centrality = tfidf.centrality(centroid_weights(units, term_lists))
    # Rounded so that platform-level float noise cannot change which sentence wins a tie.
    return np.round((0.2 + centrality) * boosts, 9), tfidf


@lru_cache(maxsize=32768)
def _count(counter: Hashable, line: str) -> int:
    return cast(TokenCounter, counter).count(line)


def count_lines(counter: TokenCounter, lines: list[str]) -> np.ndarray:
    # One cached call per line: a sentence is counted again at every summary level, and
    # tiktoken's batch API starts a thread pool per call, which costs more than it saves here.
    key = cast(Hashable, counter)  # counters hash by identity
    return np.fromiter((_count(key, line) for line in lines), dtype=np.int64, count=len(lines))


def truncate_words(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """`text` cut to `max_tokens`, backing off to a word boundary when the cut split a word.

    A cut inside a "word" longer than 30 characters (a URL, text without spaces) stays where it
    is: backing off would drop the whole thing.
    """
    if max_tokens <= 0:
        return ""
    cut = counter.truncate(text, max_tokens).rstrip("\ufffd")
    if cut == text:
        return text
    if text.startswith(cut) and not text[len(cut): len(cut) + 1].isspace():
        head = cut.rstrip()
        boundary = head.rfind(" ")
        if boundary > 0 and len(head) - boundary <= 30:
            cut = head[:boundary]
    return cut.rstrip()


def eligibility(units: Sequence[Unit], term_lists: Sequence[Sequence[str]]) -> np.ndarray:
    """Which units may be chosen: not small talk and with some content word, unless there is
    nothing else, then anything with a word, then anything at all."""
    has_terms = np.array([bool(t) for t in term_lists], dtype=bool)
    talk = np.array([cues(u.text).small_talk for u in units], dtype=bool)
    for mask in (has_terms & ~talk, has_terms):
        if mask.any():
            return mask
    return np.ones(len(units), dtype=bool)


class _Picker:
    """Greedy selection state: what is chosen, what may still be, and the budget left.

    `marker_cost` holds, for a multi-day summary, the cost of the day marker a unit's day adds
    the first time a unit of that day is chosen.
    """

    def __init__(self, units: Sequence[Unit], scores: np.ndarray, tfidf: TfIdf, eligible: np.ndarray,
                 costs: np.ndarray, budget: int, marker_cost: dict[date, int]) -> None:
        self.units, self.tfidf, self.costs, self.marker_cost = units, tfidf, costs, marker_cost
        top = float(scores[eligible].max()) if eligible.any() else 0.0
        self.relevance = scores / top if top > 0 else np.ones(len(units))
        self.source_of = np.fromiter((u.source for u in units), dtype=np.int64, count=len(units))
        self.covered = np.zeros(int(self.source_of.max()) + 1, dtype=bool)
        self.max_sim = np.zeros(len(units))
        self.alive = eligible & (costs <= budget)
        self.remaining = budget
        self.days: set[date] = set()
        self.chosen: list[int] = []

    def cost(self, i: int) -> int:
        day = self.units[i].day
        marker = self.marker_cost.get(day, 0) if day is not None and day not in self.days else 0
        return int(self.costs[i]) + marker

    def take(self, i: int) -> bool:
        """Choose unit i if it fits; it is no longer a candidate either way."""
        self.alive[i] = False
        cost = self.cost(i)
        if cost > self.remaining:
            return False
        self.chosen.append(i)
        self.remaining -= cost
        day = self.units[i].day
        if day is not None:
            self.days.add(day)
        self.covered[self.source_of[i]] = True
        self.max_sim = np.maximum(self.max_sim, self.tfidf.similarity_to(i))
        self.alive &= (self.costs <= self.remaining) & (self.max_sim < DUPLICATE_SIM)
        return True

    def take_mmr(self) -> None:
        while self.alive.any():
            value = (LAMBDA * self.relevance - (1 - LAMBDA) * self.max_sim
                     + COVERAGE_BONUS * ~self.covered[self.source_of])
            self.take(int(np.argmax(np.where(self.alive, np.round(value, 9), -np.inf))))


def select(units: Sequence[Unit], scores: np.ndarray, tfidf: TfIdf, eligible: np.ndarray,
           costs: np.ndarray, budget: int, marker_cost: dict[date, int]) -> list[int]:
    """Indices of the chosen units, in the order chosen, whose estimated cost fits `budget`:
    explicit preferences and corrections first (best first, within half the budget), then
    the rest by MMR."""
    picker = _Picker(units, scores, tfidf, eligible, costs, budget, marker_cost)
    priority = [int(i) for i in np.flatnonzero(eligible) if cues(units[int(i)].text).explicit_constraint]
    for i in sorted(priority, key=lambda i: (-scores[i], i)):
        if picker.alive[i] and budget - picker.remaining + picker.cost(i) <= budget // 2:
            picker.take(i)
    picker.take_mmr()
    return picker.chosen


def render(header: str, units: Sequence[Unit], multi_day: bool) -> str:
    """The summary text: header, then units in order; a day marker opens each new day, and
    consecutive sentences of one source and speaker share a line."""
    lines = [header] if header else []
    day: date | None = None
    prev: Unit | None = None
    for unit in units:
        if multi_day and unit.day is not None and unit.day != day:
            lines.append(f"[{format_day(unit.day)}]")
            day, prev = unit.day, None
        if prev is not None and prev.source == unit.source and prev.speaker == unit.speaker:
            joiner = "" if lines[-1].endswith(_CJK_STOPS) else " "
            lines[-1] = f"{lines[-1]}{joiner}{unit.text}"
        else:
            lines.append(unit.line)
        prev = unit
    return "\n".join(lines)


def extract_summary(sources: Sequence[SourceText], *, max_tokens: int, counter: TokenCounter) -> str:
    """An extractive summary of `sources` (in chain order) of at most `max_tokens` tokens."""
    units = units_of(sources)
    if max_tokens <= 0 or not units:
        return ""
    days = source_days(sources)
    header = format_span(min(days), max(days)) if days else ""
    multi_day = bool(days) and min(days) != max(days)
    budget = max_tokens
    if header:
        header_cost = counter.count(header) + 1
        header, budget = (header, budget - header_cost) if header_cost < max_tokens // 2 else ("", budget)
    costs = count_lines(counter, [u.line for u in units]) + 1
    markers = {u.day for u in units if u.day is not None} if multi_day else set()
    marker_cost = {d: counter.count(f"[{format_day(d)}]") + 1 for d in markers}
    term_lists = [terms(u.text) for u in units]
    scores, tfidf = score_units(units, term_lists)
    chosen = select(units, scores, tfidf, eligibility(units, term_lists), costs, budget, marker_cost)
    while chosen:
        text = render(header, [units[i] for i in sorted(chosen)], multi_day)
        if counter.count(text) <= max_tokens:
            return text
        chosen.pop()  # the last pick is the least valuable one
    return _last_resort(header, units, scores, max_tokens, counter)


def _last_resort(header: str, units: Sequence[Unit], scores: np.ndarray, max_tokens: int,
                 counter: TokenCounter) -> str:
    """Nothing fits whole: the best sentence, cut at a word boundary."""
    order = sorted(range(len(units)), key=lambda i: (cues(units[i].text).small_talk, -scores[i], i))
    best = units[order[0]].line
    if header:
        text = f"{header}\n{truncate_words(best, max_tokens - counter.count(header) - 1, counter)}"
        if counter.count(text) <= max_tokens and text.strip() != header:
            return text
    return truncate_words(best, max_tokens, counter)
