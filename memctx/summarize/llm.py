"""The LLM summarizer: summaries and board updates from any OpenAI-compatible chat endpoint.

Owns: `LLMSummarizer`, which sends the prompts of `memctx.summarize.prompts`, validates the
JSON reply against the prompt's response model, keeps the result within `max_tokens`, and on
any failure (HTTP error, timeout, invalid JSON, wrong schema, a reply cut at its token limit)
falls back to another summarizer (the extractive one) for that whole call, counts the failure by
kind and tells `on_failure`. A reply is used whole or not at all: nothing of a failed reply
reaches a summary or the board. `stats()` counts the calls, the fallbacks and the board items
the model wrote that cite no message. It must not read the environment: every setting is
passed in.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import Counter
from dataclasses import replace
from typing import Any, Callable, Literal, Sequence, TypeVar, cast

import openai
from openai.types.chat import ChatCompletionMessageParam
from pydantic import BaseModel, ValidationError

from memctx.summarize.board import board_from_fields
from memctx.summarize.extractive import with_previous
from memctx.summarize.prompts import (
    BoardResponse,
    Messages,
    SummaryResponse,
    board_prompt,
    higher_level_prompt,
    level1_prompt,
    master_prompt,
)
from memctx.summarize.length import fit
from memctx.summarize.text import format_span, parse_span, source_days
from memctx.summarize.types import SECTIONS, Board, SourceText, Summarizer, SummaryDraft
from memctx.tokens import TokenCounter

log = logging.getLogger(__name__)

FailureKind = Literal["http", "timeout", "invalid_json", "schema"]
FAILURE_KINDS: tuple[FailureKind, ...] = ("http", "timeout", "invalid_json", "schema")
Task = Literal["summary", "board"]
Reply = TypeVar("Reply", bound=BaseModel)
# Room beyond twice the asked length for the JSON around a summary, and for a board's lists (its
# section caps of ~15-token lines). A model that runs on past it is cut off and falls back.
SUMMARY_REPLY_ROOM = 64
BOARD_REPLY_ROOM = 2048

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL | re.IGNORECASE)


class LLMFailure(Exception):
    """A reply that cannot be used; `kind` is one of FAILURE_KINDS."""

    def __init__(self, kind: FailureKind, detail: str) -> None:
        self.kind = kind
        super().__init__(f"{kind}: {detail}")


def parse_reply(content: str | None, model: type[Reply]) -> Reply:
    """The reply text as `model`: JSON (a ```json fence is tolerated), then schema validation."""
    if content is None or not content.strip():
        raise LLMFailure("invalid_json", "the reply is empty")
    fenced = _FENCE.match(content)
    try:
        data = json.loads(fenced[1] if fenced else content)
    except ValueError as exc:
        raise LLMFailure("invalid_json", f"{exc.__class__.__name__}: {exc}") from None
    if not isinstance(data, dict):
        raise LLMFailure("schema", f"expected a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise LLMFailure("schema", str(exc).replace("\n", " ")) from None


class LLMSummarizer:
    """A `Summarizer` backed by a chat model, with a summarizer to fall back on."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None,
        fallback: Summarizer,
        counter: TokenCounter,
        timeout: float = 30.0,
        max_retries: int = 2,
        temperature: float = 0.0,
        on_failure: Callable[[str], None] | None = None,
        max_reply_tokens: int | None = None,
    ) -> None:
        self.name = f"llm:{model}"
        self.model = model
        self.temperature = temperature
        self.fallback = fallback
        self.counter = counter
        self.on_failure = on_failure
        # None: twice the asked length plus SUMMARY_REPLY_ROOM or BOARD_REPLY_ROOM.
        self.max_reply_tokens = max_reply_tokens
        self.failures: dict[str, int] = {kind: 0 for kind in FAILURE_KINDS}
        self.calls: Counter[Task] = Counter()
        self.fallbacks: Counter[Task] = Counter()
        self.unsourced_items = 0
        self._lock = threading.Lock()
        # A local server needs no key, but the client refuses none (and would read the
        # environment for one): a placeholder keeps this module free of environment reads.
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "unused", timeout=timeout,
                                     max_retries=max_retries)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "LLMSummarizer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def complete(self, messages: Messages, model: type[Reply], *, reply_tokens: int) -> Reply:
        """One chat completion in JSON mode of at most `reply_tokens` tokens, validated as
        `model`; raises `LLMFailure`."""
        try:
            completion = self._client.chat.completions.create(
                model=self.model, messages=cast("list[ChatCompletionMessageParam]", messages),
                temperature=self.temperature, response_format={"type": "json_object"}, max_tokens=reply_tokens,
            )
        except openai.APITimeoutError as exc:
            raise LLMFailure("timeout", str(exc)) from None
        except openai.OpenAIError as exc:
            raise LLMFailure("http", f"{exc.__class__.__name__}: {exc}") from None
        try:
            choice = completion.choices[0]
            content = choice.message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise LLMFailure("schema", f"not a chat completion: {exc}") from None
        if choice.finish_reason == "length":
            raise LLMFailure("invalid_json", f"the reply was cut at its limit of {reply_tokens} tokens")
        return parse_reply(content, model)

    def _ask(self, task: Task, messages: Messages, model: type[Reply], *, room: int, max_tokens: int) -> Reply:
        with self._lock:
            self.calls[task] += 1
        limit = self.max_reply_tokens or 2 * max_tokens + room
        return self.complete(messages, model, reply_tokens=limit)

    def _record(self, failure: LLMFailure, task: Task) -> None:
        with self._lock:
            self.failures[failure.kind] += 1
            self.fallbacks[task] += 1
        # The kind only: a failure's text may quote the reply, and so the conversation.
        log.warning("LLM %s failed (%s); using %s instead", task, failure.kind, self.fallback.name)
        if self.on_failure is not None:
            self.on_failure(failure.kind)

    def stats(self) -> dict[str, Any]:
        """What the model was asked and how often its reply could not be used, JSON-ready:
        calls and fallbacks per task (summary, board), failures per kind, and the board items it
        wrote that no message of their batch backs (kept, with no sources)."""
        with self._lock:
            return {"model": self.model,
                    "calls": {task: self.calls[task] for task in ("summary", "board")},
                    "fallbacks": {task: self.fallbacks[task] for task in ("summary", "board")},
                    "failures": dict(self.failures), "unsourced_items": self.unsourced_items}

    def summarize(self, sources: Sequence[SourceText], *, level: int, is_master: bool, max_tokens: int,
                  previous: str | None = None) -> SummaryDraft:
        if not sources and not (previous or "").strip():
            return SummaryDraft(content="", token_count=0, summarizer=self.name)
        if is_master:
            messages = master_prompt(_without_text(sources, previous), previous=previous, max_tokens=max_tokens)
        elif level <= 1:
            messages = level1_prompt(sources, max_tokens=max_tokens)
        else:
            messages = higher_level_prompt(sources, level=level, max_tokens=max_tokens)
        try:
            reply = self._ask("summary", messages, SummaryResponse, room=SUMMARY_REPLY_ROOM, max_tokens=max_tokens)
        except LLMFailure as failure:
            self._record(failure, "summary")
            draft = self.fallback.summarize(sources, level=level, is_master=is_master,
                                            max_tokens=max_tokens, previous=previous)
            return replace(draft, fallback=True)
        scope = with_previous(sources, previous, level) if is_master else list(sources)
        content = fit(_dated(reply.summary, scope), max_tokens, self.counter)  # a model may overshoot
        return SummaryDraft(content=content, token_count=self.counter.count(content), summarizer=self.name)

    def update_board(self, board: Board, new_messages: Sequence[SourceText], *, max_tokens: int) -> Board:
        fresh = [m for m in new_messages if m.last_seq > board.last_seq]
        if not fresh:
            return board
        try:
            reply = self._ask("board", board_prompt(board, fresh, max_tokens=max_tokens), BoardResponse,
                              room=BOARD_REPLY_ROOM, max_tokens=max_tokens)
        except LLMFailure as failure:
            self._record(failure, "board")
            return self.fallback.update_board(board, new_messages, max_tokens=max_tokens)
        proposed = reply.model_dump()
        updated = board_from_fields(board, fresh, summary=fit(reply.summary, max_tokens, self.counter), proposed=proposed)
        unsourced = _unsourced(board, updated)
        if unsourced:
            with self._lock:
                self.unsourced_items += unsourced
        return updated


def _unsourced(previous: Board, board: Board) -> int:
    """How many items `board` has that `previous` did not and that cite no message."""
    count = 0
    for spec in SECTIONS:
        before = {item.text for item in previous.section(spec.name)}
        count += sum(1 for item in board.section(spec.name) if not item.sources and item.text not in before)
    return count


def _without_text(sources: Sequence[SourceText], text: str | None) -> list[SourceText]:
    """The sources minus the one whose text is `text` (the master is passed as `previous`)."""
    if not text:
        return list(sources)
    return [s for s in sources if s.text.strip() != text.strip()]


def _dated(summary: str, sources: Sequence[SourceText]) -> str:
    """The summary opened by the date span of its sources, unless the model already wrote it."""
    days = source_days(sources)
    first_line = summary.strip().splitlines()[0] if summary.strip() else ""
    if not days or parse_span(first_line) is not None:
        return summary.strip()
    return f"{format_span(min(days), max(days))}\n{summary.strip()}"
