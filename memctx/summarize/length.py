"""How long a summary may be: never longer than what it covers.

Owns: the cap on a summary's tokens (at most half of what it covers, never over the length
asked for) and the one way memctx cuts a model's text to a length (`fit`, at a word boundary),
since a summarizer (an LLM) may overshoot the length it was asked for. Otherwise reading a
summary costs more than reading its sources. Pure; no I/O. The pipeline applies it to every
summary it writes: chain summaries of every level, the master, and a conversation's long-term
summary; the LLM summarizer fits its replies with it.
"""

from __future__ import annotations

from dataclasses import replace

from memctx.summarize.ranking import truncate_words
from memctx.summarize.types import SummaryDraft
from memctx.tokens import TokenCounter


def summary_cap(covered_tokens: int, length: int) -> int:
    """Tokens a summary of `covered_tokens` may take: half of them, and at most `length`."""
    return max(1, min(length, covered_tokens // 2))


def fit(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """`text` within `max_tokens` tokens of `counter`, cut at a word boundary when it is longer."""
    cut, limit = text, max_tokens
    while counter.count(cut) > max_tokens:  # a cut inside a word can re-encode a token longer
        cut, limit = truncate_words(text, limit, counter), limit - 1
    return cut


def capped(draft: SummaryDraft, cap: int, counter: TokenCounter) -> SummaryDraft:
    """The draft within `cap` tokens, its token count taken by `counter` (not the summarizer's)."""
    content = fit(draft.content, cap, counter)
    count = counter.count(content)
    return draft if (content, count) == (draft.content, draft.token_count) else replace(
        draft, content=content, token_count=count)
