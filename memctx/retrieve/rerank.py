"""The rerank stage: a seam for cross-encoders, and the simple rerankers memctx ships.

Owns: the `Reranker` protocol (query + memories in → memories out, best first) and two
implementations: `NoRerank` (keeps the fused order) and `TermOverlapReranker` (blends the fused
score with the share of query terms a memory contains). No cross-encoder weights are installable
here; a real one plugs in by implementing `rerank`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol, Sequence

from memctx.retrieve.lexical import analyze
from memctx.retrieve.types import Memory
from memctx.words import bare_words


class Reranker(Protocol):
    """Reorders memories for a query; returns them best first (it may also drop some)."""

    name: str

    def rerank(self, query: str, memories: Sequence[Memory]) -> list[Memory]: ...


class NoRerank:
    name = "none"

    def rerank(self, query: str, memories: Sequence[Memory]) -> list[Memory]:
        return list(memories)


class TermOverlapReranker:
    """score' = score × (1 + weight × share of the query's terms found in the memory)."""

    name = "term-overlap"

    def __init__(self, weight: float = 1.0) -> None:
        self.weight = weight

    def rerank(self, query: str, memories: Sequence[Memory]) -> list[Memory]:
        terms = set(analyze(query).terms)
        if not terms:
            return list(memories)
        out = []
        for memory in memories:
            found = set(bare_words(memory.text))
            share = len(terms & found) / len(terms)
            out.append(replace(memory, score=memory.score * (1 + self.weight * share)))
        return sorted(out, key=lambda m: -m.score)
