"""The default summarizer: extractive, deterministic, needs no key and no network.

Owns: `ExtractiveSummarizer`, the `Summarizer` that picks the most central, fact-bearing
sentences of its sources within the token budget (`memctx.summarize.ranking`) and updates the
board by transparent rules (`memctx.summarize.board`). It never calls a model; the LLM
summarizer falls back to it.
"""

from __future__ import annotations

from typing import Sequence
from uuid import UUID

from memctx.summarize import board as board_rules
from memctx.summarize.ranking import extract_summary
from memctx.summarize.types import Board, SourceText, SummaryDraft
from memctx.tokens import TokenCounter, get_counter

# The id of the pseudo-source that carries `previous` when it is not among the sources.
PREVIOUS_MASTER_ID = UUID(int=0)


def with_previous(sources: Sequence[SourceText], previous: str | None, level: int) -> list[SourceText]:
    """`sources`, led by the previous master text unless it is already one of them."""
    items = list(sources)
    if not previous or not previous.strip() or any(s.text.strip() == previous.strip() for s in items):
        return items
    first = min((s.first_seq for s in items), default=1)
    head = SourceText(id=PREVIOUS_MASTER_ID, kind="summary", role=None, speaker=None, text=previous,
                      first_seq=1, last_seq=max(first - 1, 1), level=level)
    return [head, *items]


class ExtractiveSummarizer:
    """Summaries from the sources' own sentences, with speaker names and a date header."""

    name = "extractive"

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.counter = counter or get_counter()

    def summarize(self, sources: Sequence[SourceText], *, level: int, is_master: bool, max_tokens: int,
                  previous: str | None = None) -> SummaryDraft:
        items = with_previous(sources, previous, level) if is_master else list(sources)
        content = extract_summary(items, max_tokens=max_tokens, counter=self.counter)
        return SummaryDraft(content=content, token_count=self.counter.count(content),
                            summarizer=self.name, fallback=False)

    def update_board(self, board: Board, new_messages: Sequence[SourceText], *, max_tokens: int) -> Board:
        return board_rules.update_board(board, new_messages, max_tokens=max_tokens, counter=self.counter)
