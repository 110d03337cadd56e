"""Baselines of the evaluation, at the same budget as memctx: whole turns ranked by one signal.

Owns: recency (the most recent turns that fit), dense-only (cosine similarity), full-text-only
(ts_rank_cd of the same OR query memctx uses), each packed best first into the budget left after
the system prompt and the query, rendered like memctx's memory lines. Pure over rows from the
`rank_conversation` query.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from memctx.assemble.render import format_date
from memctx.tokens import TokenCounter, message_tokens, messages_tokens

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
    fixed = messages_tokens(counter, [{"role": "system", "content": system}, {"role": "user", "content": query}])
    room = budget - fixed - message_tokens(counter, "system", "")
    chosen, used = [], 0
    for row in order(rows, kind):
        cost = line_tokens[row["id"]] + 1
        if used + cost <= room:
            chosen.append(row)
            used += cost
    lines = [turn_line(r) for r in sorted(chosen, key=lambda r: r["seq"])]
    while lines:
        content = "\n".join(lines)
        total = fixed + message_tokens(counter, "system", content)
        if total <= budget:
            return f"{system}\n{content}\n{query}", total
        lines.pop(0)
    return f"{system}\n{query}", fixed
