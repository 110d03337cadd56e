"""Greedy packing under a token budget, and a counter that remembers recent counts.

Owns: the packing rules and the budget's split between sections; what a chat message costs is
`memctx.tokens.message_tokens`. Pure; no I/O.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Generic, Iterable, TypeVar

from memctx.tokens import PER_MESSAGE, TokenCounter

MIN_MESSAGE_TOKENS = PER_MESSAGE + 1  # a message's least cost: "user" and "assistant" are one token each

T = TypeVar("T")


class BudgetTooSmall(ValueError):
    """The system prompt and the query alone do not fit the budget."""


# Where a text splits into lines whose counts add up (`TiktokenCounter.lines_add_up`).
_LINE_STARTS = re.compile(r"(?<=\n)(?=\S)")


class CachedCounter:
    """A `TokenCounter` that remembers the counts of recent texts (turns and summaries recur
    across calls and across the fitting loop); bounded, thread-safe enough for a cache. Over a
    counter whose counts add up over lines, a new text of several lines is counted as the sum of
    its lines, which recur (a section assembled anew on every call is made of lines counted
    before)."""

    def __init__(self, counter: TokenCounter, size: int = 50_000) -> None:
        self.name = counter.name
        self._counter = counter
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._size = size
        self._by_lines = bool(getattr(counter, "lines_add_up", False))

    def count(self, text: str) -> int:
        hit = self._cache.get(text)
        if hit is None:
            lines = _LINE_STARTS.split(text) if self._by_lines and "\n" in text else ()
            hit = self._cache[text] = (sum(self.count(line) for line in lines) if len(lines) > 1
                                       else self._counter.count(text))
            if len(self._cache) > self._size:
                try:
                    self._cache.popitem(last=False)
                except KeyError:  # another thread emptied it first
                    pass
        return hit

    def count_many(self, texts: list[str]) -> list[int]:
        return [self.count(t) for t in texts]

    def truncate(self, text: str, max_tokens: int) -> str:
        return self._counter.truncate(text, max_tokens)


@dataclass(frozen=True)
class Packed(Generic[T]):
    kept: list[T]
    left: list[T]
    tokens: int


def pack(items: Iterable[T], cost: Callable[[T], int], budget: int) -> Packed[T]:
    """Take items in order while they fit; an item that does not fit is skipped, later smaller
    ones may still fit (best-first greedy knapsack)."""
    kept: list[T] = []
    left: list[T] = []
    used = 0
    for item in items:
        c = cost(item)
        if used + c <= budget:
            kept.append(item)
            used += c
        else:
            left.append(item)
    return Packed(kept, left, used)


def shares(available: int, current_share: float) -> tuple[int, int]:
    """Split the tokens left after system prompt and query: (current context, memories)."""
    current = int(available * current_share)
    return current, available - current
