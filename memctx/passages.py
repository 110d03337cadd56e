"""Cutting a long message into passages. Pure.

Owns: where a message's passages begin and end. A passage is a verbatim stretch of the text, at
most `size` tokens, made of whole sentences (a line break also ends one) where they fit: a
sentence longer than a passage is cut by tokens. Consecutive passages share up to `overlap`
tokens of whole sentences, so that a point made across a boundary is whole in one of them. It
must not decide which messages are long (the pipeline does) nor store anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memctx.tokens import TokenCounter

# A sentence ends after . ! ? (and closing quotes or brackets; not the "2." of a numbered list)
# followed by space, or at a line break.
_SENTENCE_END = re.compile(r"(?<!\d\.)(?<=[.!?])[\"')\]]*\s+|\n+")


@dataclass(frozen=True)
class Passage:
    """A stretch of a message's text: its number in the message and where it lies in the text."""

    part: int
    start: int
    end: int
    text: str
    token_count: int


def sentences(text: str) -> list[tuple[int, int]]:
    """The (start, end) spans of the text's sentences, outer whitespace left out."""
    spans, start = [], 0
    for mark in _SENTENCE_END.finditer(text):
        if mark.start() > start:
            spans.append((start, mark.start()))
        start = mark.end()
    if start < len(text):
        spans.append((start, len(text)))
    return [(a, b) for a, b in (_strip(text, a, b) for a, b in spans) if b > a]


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _units(text: str, counter: TokenCounter, size: int) -> list[tuple[int, int, int]]:
    """Sentences as (start, end, tokens), a sentence over `size` tokens cut into pieces of at most
    `size` tokens."""
    spans = sentences(text)
    counts = counter.count_many([text[a:b] for a, b in spans])
    units = []
    for (start, end), tokens in zip(spans, counts):
        while tokens > size:
            head = counter.truncate(text[start:end], size)
            cut = start + len(head)
            if cut <= start:  # a single token longer than the text it decodes to: keep it whole
                break
            units.append((start, cut, counter.count(head)))
            start, _ = _strip(text, cut, end)
            tokens = counter.count(text[start:end])
        if end > start:
            units.append((start, end, tokens))
    return units


def split_passages(text: str, counter: TokenCounter, size: int, overlap: int) -> list[Passage]:
    """The text's passages in order: each of at most `size` tokens counted sentence by sentence
    (its exact count, which is what it reports, can differ by a token or so per sentence), each
    after the first beginning with the previous one's last sentences of at most `overlap` tokens
    together."""
    if size < 1 or overlap < 0 or overlap >= size:
        raise ValueError("a passage needs size >= 1 and 0 <= overlap < size")
    units = _units(text, counter, size)
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(units):
        j, tokens = i, 0
        while j < len(units) and (j == i or tokens + units[j][2] <= size):
            tokens += units[j][2]
            j += 1
        spans.append((units[i][0], units[j - 1][1]))
        if j >= len(units):
            break
        back, shared = j, 0
        while back - 1 > i and shared + units[back - 1][2] <= overlap:
            back -= 1
            shared += units[back][2]
        i = back
    counts = counter.count_many([text[a:b] for a, b in spans])
    return [Passage(n, a, b, text[a:b], c) for n, ((a, b), c) in enumerate(zip(spans, counts))]
