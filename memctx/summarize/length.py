"""How long a summary may be: never longer than what it covers.

Owns: the cap on a summary's tokens (at most half of what it covers, never over the length
asked for) and cutting a summarizer's draft to it, since a summarizer (an LLM) may overshoot
the length it was asked for. Otherwise reading a summary costs more than reading its sources.
Pure; no I/O. The pipeline applies it to every summary it writes: chain summaries of every
level, the master, and a conversation's long-term summary.
"""

from __future__ import annotations

from dataclasses import replace

from memctx.summarize.types import SummaryDraft
from memctx.tokens import TokenCounter


def summary_cap(covered_tokens: int, length: int) -> int:
    """Tokens a summary of `covered_tokens` may take: half of them, and at most `length`."""
    return max(1, min(length, covered_tokens // 2))


def capped(draft: SummaryDraft, cap: int, counter: TokenCounter) -> SummaryDraft:
    """The draft within `cap` tokens, its token count taken by `counter` (not the summarizer's)."""
    content, count, limit = draft.content, counter.count(draft.content), cap
    while count > cap:  # a cut inside a word can re-encode a token longer
        content = counter.truncate(draft.content, limit)
        count, limit = counter.count(content), limit - 1
    return draft if (content, count) == (draft.content, draft.token_count) else replace(
        draft, content=content, token_count=count)
