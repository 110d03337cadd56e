"""Baselines of the evaluation, at the same budget as memctx: whole turns ranked by one signal.

Owns: recency (the most recent turns that fit), dense-only (cosine similarity), full-text-only
(ts_rank_cd of the same OR query memctx uses), each packed best first into the budget left after
the system prompt and the query, rendered like memctx's memory lines. Pure over rows from the
`rank_conversation` query. For LongMemEval, also plain Okapi BM25 over whole turns (`bm25_scores`)
and the RRF of BM25 and dense (`rrf_order`), the hybrid search a chat app would write itself.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Mapping, Sequence

from memctx.assemble.render import format_date
from memctx.retrieve.fusion import FusionWeights, fuse
from memctx.tokens import TokenCounter, message_tokens, messages_tokens
from memctx.words import STOPWORDS, bare_words

BASELINES = ("recency", "dense", "fulltext")


def turn_line(row: Mapping[str, Any]) -> str:
    return f"[{format_date(row['created_at'])}] {row['speaker'] or row['role']}: {row['text']}"


def order(rows: Sequence[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    if kind == "recency":
        return sorted(rows, key=lambda r: -r["seq"])
    if kind == "dense":
        return sorted(rows, key=lambda r: -(r["similarity"] or -2.0))
    if kind == "fulltext":
        return sorted((r for r in rows if (r["lexical_score"] or 0) > 0), key=lambda r: -r["lexical_score"])
    raise ValueError(f"unknown baseline {kind!r}")


def baseline_context(rows: Sequence[Mapping[str, Any]], kind: str, system: str, query: str, budget: int,
                     counter: TokenCounter, line_tokens: Mapping[Any, int]) -> tuple[str, int]:
    """The baseline's context text and its exact token count."""
    return pack(order(rows, kind), system, query, budget, counter, line_tokens)


def pack(ranked: Sequence[Mapping[str, Any]], system: str, query: str, budget: int, counter: TokenCounter,
         line_tokens: Mapping[Any, int]) -> tuple[str, int]:
    """Whole turns best first (`ranked`) into the budget, shown in the order said: the context's
    text and its exact token count."""
    fixed = messages_tokens(counter, [{"role": "system", "content": system}, {"role": "user", "content": query}])
    room = budget - fixed - message_tokens(counter, "system", "")
    chosen, used = [], 0
    for row in ranked:
        cost = line_tokens[row["id"]] + 1
        if used + cost <= room:
            chosen.append(row)
            used += cost
    lines = [turn_line(r) for r in sorted(chosen, key=lambda r: (r["created_at"], r["seq"]))]
    while lines:
        content = "\n".join(lines)
        total = fixed + message_tokens(counter, "system", content)
        if total <= budget:
            return f"{system}\n{content}\n{query}", total
        lines.pop(0)
    return f"{system}\n{query}", fixed


def bm25_terms(text: str) -> list[str]:
    """The words BM25 matches on: bare, lower-cased, no stop words (no stemming)."""
    return [w for w in bare_words(text) if w not in STOPWORDS]


def bm25_scores(query: Sequence[str], documents: Sequence[Sequence[str]], k1: float = 1.2,
                b: float = 0.75) -> list[float]:
    """Okapi BM25 of each document (its terms) for the query's terms (Robertson's idf, kept
    positive as Lucene does)."""
    n = len(documents)
    avglen = sum(len(d) for d in documents) / n if n else 0.0
    wanted = set(query)
    counts = [Counter(t for t in d if t in wanted) for d in documents]
    df = Counter(t for c in counts for t in c)
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in df}
    scores = []
    for doc, tf in zip(documents, counts):
        norm = k1 * (1 - b + b * len(doc) / avglen) if avglen else k1
        scores.append(sum(idf[t] * tf[t] * (k1 + 1) / (tf[t] + norm) for t in set(query) if t in tf))
    return scores


def rrf_order(lexical: Sequence[Any], dense: Sequence[Any], k: float = 60.0) -> list[Any]:
    """Items of a full-text and a dense ranking (best first) by plain reciprocal-rank fusion,
    Σ 1 / (k + rank): memctx's own fusion (`memctx.retrieve.fusion`) with both lists weighed 1 and
    no recency. Ties keep the order items were first met in."""
    candidates: dict[Any, dict[str, int | None]] = {}
    for name, ranking in (("lexical", lexical), ("dense", dense)):
        for rank, item in enumerate(ranking, start=1):
            candidates.setdefault(item, {})[name] = rank
    return [item for item, _ in fuse(candidates, FusionWeights.of(k=k, dense=1.0, lexical=1.0, recency=0.0))]
