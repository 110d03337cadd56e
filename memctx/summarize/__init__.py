"""Summarization without a database: hierarchy rules, summarizers and the summary board.

Owns the pure side of summarizing a conversation. `chain` decides what to summarize next,
`extractive` (the default, key-free) and `llm` (any OpenAI-compatible endpoint, falling back to
extractive) write summaries, and `board` keeps the per-conversation summary board. Reading the
chain from Postgres and writing the results is the worker's job, not this package's.
"""

from importlib import import_module

# Each name is imported on first use (PEP 562): importing one submodule (types, say, for the names
# of the board's sections) does not load the LLM summarizer's HTTP client with it.
_EXPORTS = {
    "update_board": "board", "Action": "chain", "ChainElement": "chain", "ChainParams": "chain",
    "ChainRun": "chain", "apply_action": "chain", "chain_order": "chain", "expected_chain": "chain",
    "plan_next": "chain", "simulate": "chain", "ExtractiveSummarizer": "extractive", "FAILURE_KINDS": "llm",
    "LLMFailure": "llm", "LLMSummarizer": "llm", "extract_summary": "ranking", "ENTITY_KINDS": "types",
    "Board": "types", "SourceText": "types", "Summarizer": "types", "SummaryDraft": "types",
}


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)


__all__ = [
    "Action", "Board", "ChainElement", "ChainParams", "ChainRun", "ENTITY_KINDS", "ExtractiveSummarizer",
    "FAILURE_KINDS", "LLMFailure", "LLMSummarizer", "SourceText", "Summarizer", "SummaryDraft",
    "apply_action", "chain_order", "expected_chain", "extract_summary", "plan_next", "simulate",
    "update_board",
]
