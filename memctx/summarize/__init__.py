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
from memctx.summarize.llm import FAILURE_KINDS, LLMFailure, LLMSummarizer
from memctx.summarize.ranking import extract_summary
from memctx.summarize.types import ENTITY_KINDS, Board, SourceText, Summarizer, SummaryDraft

__all__ = [
    "Action", "Board", "ChainElement", "ChainParams", "ChainRun", "ENTITY_KINDS", "ExtractiveSummarizer",
    "FAILURE_KINDS", "LLMFailure", "LLMSummarizer", "SourceText", "Summarizer", "SummaryDraft",
    "apply_action", "chain_order", "expected_chain", "extract_summary", "plan_next", "simulate",
    "update_board",
]
