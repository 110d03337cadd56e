"""The provider registry: the embedder, the summarizer and the learner the settings name, built
once per App.

Owns: choosing and configuring providers. The providers themselves live with their kind
(`memctx.embed`, `memctx.summarize`); the openai client is only imported when one is used.
"""

from __future__ import annotations

from typing import Any

from memctx import metrics
from memctx.config import Settings
from memctx.embed import Embedder, LocalE5Small, LocalMiniLM, OpenAIEmbedder
from memctx.learn.types import Learner
from memctx.summarize.types import Summarizer
from memctx.tokens import TokenCounter


def make_embedder(settings: Settings) -> Embedder:
    """The embedder the settings name: local (int8 MiniLM), local-e5-small (4-bit e5, the `e5` extra)
    or any OpenAI-compatible endpoint."""
    if settings.embedder == "local":
        return LocalMiniLM(batch_size=settings.embed_batch_size, threads=settings.embed_threads,
                           model_cache=settings.model_cache, queries=settings.query_embedding)
    if settings.embedder == "local-e5-small":
        return LocalE5Small(threads=settings.embed_threads)
    if settings.embedder == "openai":
        return OpenAIEmbedder(
            model=settings.embedding_model or "", dimensions=settings.embedding_dimensions,
            base_url=settings.embedding_base_url,
            api_key=settings.embedding_api_key.get_secret_value() if settings.embedding_api_key else None,
        )
    raise ValueError(f"unknown embedder {settings.embedder!r}")


def make_summarizer(settings: Settings, counter: TokenCounter) -> Summarizer:
    """The configured summarizer: extractive (default) or the LLM one, which falls back to it."""
    from memctx.summarize.extractive import ExtractiveSummarizer

    extractive = ExtractiveSummarizer(counter)
    if settings.summarizer == "extractive":
        return extractive
    from memctx.summarize.llm import LLMSummarizer  # the openai client is only imported when used

    def on_failure(kind: str, *_: Any) -> None:
        metrics.FAILURES.labels(kind=f"llm_{kind}").inc()

    return LLMSummarizer(base_url=settings.llm_base_url or "https://api.openai.com/v1", model=settings.llm_model,
                         api_key=settings.llm_api_key.get_secret_value() if settings.llm_api_key else None,
                         timeout=settings.llm_timeout_s, max_retries=settings.llm_max_retries,
                         fallback=extractive, counter=counter, on_failure=on_failure)


def make_learner(settings: Settings, summarizer: Summarizer) -> "Learner":
    """The profile's learner: the LLM one when the summarizer is (it asks through the summarizer's
    client and falls back to the extractive learner per batch), else the key-free extractive one."""
    from memctx.learn.extract import ExtractiveLearner

    extractive = ExtractiveLearner()
    if settings.summarizer != "llm" or not hasattr(summarizer, "complete"):
        return extractive
    from memctx.learn.llm import LLMLearner

    def on_failure(kind: str) -> None:
        metrics.FAILURES.labels(kind=f"llm_{kind}").inc()

    return LLMLearner(summarizer, extractive, name=f"llm:{settings.llm_model}", on_failure=on_failure)
