"""Summarization without a database: hierarchy rules, summarizers and the summary board.

Owns the pure side of summarizing a conversation. `chain` decides what to summarize next,
`extractive` (the default, key-free) and `llm` (any OpenAI-compatible endpoint, falling back to
extractive) write summaries, and `board` keeps the per-conversation summary board. Reading the
chain from Postgres and writing the results is the worker's job, not this package's.
"""

from memctx.summarize.board import update_board
from memctx.summarize.chain import (
    Action,
    ChainElement,
    ChainParams,
    ChainRun,
    apply_action,
    chain_order,
    expected_chain,
    plan_next,
    simulate,
)
from memctx.summarize.extractive import ExtractiveSummarizer
from memctx.summarize.ranking import extract_summary
from memctx.summarize.types import ENTITY_KINDS, Board, SourceText, Summarizer, SummaryDraft

__all__ = [
    "Action", "Board", "ChainElement", "ChainParams", "ChainRun", "ENTITY_KINDS", "ExtractiveSummarizer",
    "FAILURE_KINDS", "LLMFailure", "LLMSummarizer", "SourceText", "Summarizer", "SummaryDraft",
    "apply_action", "chain_order", "expected_chain", "extract_summary", "plan_next", "simulate",
    "update_board",
]

# The LLM summarizer's names, imported on first use: its module imports the openai client, which
# costs every process ~1 s of CPU, and the default summarizer is the extractive one.
_LLM_NAMES = ("FAILURE_KINDS", "LLMFailure", "LLMSummarizer")


def __getattr__(name: str):
    if name in _LLM_NAMES:
        from memctx.summarize import llm

        return getattr(llm, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
