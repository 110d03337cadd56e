"""The history of a conversation as a context sees it: every turn when they all fit, what its
turns say (sentences, `memctx.assemble.repeats`), the memories of other conversations worth
adding beside a history sent as it is, and the compression of older turns. Pure, but for the
compressor's cache."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Mapping, Sequence
from uuid import UUID

from memctx.assemble.current import Compressor
from memctx.assemble.render import chat_turn
from memctx.assemble.repeats import keys
from memctx.retrieve.types import Memory
from memctx.summarize.extractive import ExtractiveSummarizer
from memctx.summarize.types import SourceText
from memctx.tokens import TokenCounter


@dataclass(frozen=True)
class Unstored:
    """The query's own message, stored before the context was asked for, and its tokens as a chat
    message: the context leaves it out of the history and the memories."""

    id: UUID
    tokens: int


def without_message(memories: Sequence[Memory], message: UUID) -> list[Memory]:
    """The memories less one message: a memory whose hit it is goes (its partner turn came only with
    it), and elsewhere it leaves the memory's fragments."""
    out: list[Memory] = []
    for memory in memories:
        if memory.id == message:
            continue
        if any(f.id == message for f in memory.fragments):
            memory = replace(memory, fragments=tuple(f for f in memory.fragments if f.id != message))
        out.append(memory)
    return out


@dataclass(frozen=True)
class History:
    """Every turn of a conversation, oldest first, and the same as chat messages."""

    turns: list[Mapping[str, Any]]
    messages: list[dict[str, str]]


def whole_history(rows: Sequence[Mapping[str, Any]]) -> History | None:
    """The conversation's every turn when the `current_context` rows hold them all, else None."""
    count = next(r["message_count"] for r in rows if r["kind"] == "conversation")
    turns = sorted((r for r in rows if r["kind"] == "message"), key=lambda r: r["last_seq"])
    if len(turns) < count:
        return None
    return History(turns, [chat_turn(t["role"], t["content"]) for t in turns])


# How near in meaning (cosine) a memory of another conversation that shares no search term with
# the query must be to join a history sent as it is. The search's own floor (0.15) is set for
# recall in a compressed context, where a weak hit costs only its place; beside a whole history
# it would be all that the context adds. MiniLM puts unrelated lines at 0.0-0.2 (the demo's
# birthday dinner brought a bakery's butter order at 0.16) and small talk near any diary line at
# 0.24-0.27 ("Hello! How are you today?"). The first 16 LongMemEval dev instances, where every
# memory comes this way, find the same evidence turns at 0, 0.25 and 0.35.
NEARBY_SIMILARITY = 0.3


def said_nearby(memory: Memory) -> bool:
    """Whether a memory of another conversation is worth adding to a history sent as it is: the
    full-text list ranked it (it, or a turn beside it, shares a term with the query), or its
    meaning is near the query's."""
    return memory.provenance.ranks.get("lexical") is not None or (memory.similarity or 0.0) >= NEARBY_SIMILARITY


def turns_said(turns: Sequence[Mapping[str, Any]]) -> set[str]:
    """The sentences (`repeats.keys`) the turns say."""
    return {k for t in turns for k in keys(t["content"])}


def said_already(memories: Sequence[Memory], said: set[str]) -> set[UUID]:
    """The ids of the memories' turns whose every sentence of five words or more `said` holds:
    showing them again would add nothing."""
    out: set[UUID] = set()
    if not said:  # nothing said yet (a new conversation): every turn adds something
        return out
    for memory in memories:
        for fragment in memory.fragments:
            ks = keys(fragment.text)
            if ks and ks <= said:
                out.add(fragment.id)
    return out


def extractive_compressor(counter: TokenCounter, cache_size: int = 1_024) -> Compressor:
    """The compression of older turns, with the extractive summarizer. The summary is a
    function of the turns alone (ids, roles, speakers, texts, seqs, times and their zones: all of
    them are its cache key, so an edited turn is summarized anew) and of the length; the same older half
    recurs on every call until the conversation moves on, so it is kept (`cache_size` entries)."""
    summarizer = ExtractiveSummarizer(counter)

    @lru_cache(maxsize=cache_size)
    def summary(turns: tuple[tuple[Any, ...], ...], max_tokens: int) -> str | None:
        sources = [SourceText(id=id, kind="message", role=role, speaker=speaker, text=text, first_seq=seq,
                              last_seq=seq, created_at=created_at)
                   for id, role, speaker, text, seq, created_at, _ in turns]
        return summarizer.summarize(sources, level=1, is_master=False, max_tokens=max_tokens).content or None

    def compress(turns: Sequence[Mapping[str, Any]], max_tokens: int) -> str | None:
        # A time's zone is in the key too: equal instants in two zones compare equal, but may
        # fall on different days.
        return summary(tuple((t["id"], t["role"], t["speaker"], t["content"], t["last_seq"], t["created_at"],
                              getattr(t["created_at"], "tzinfo", None)) for t in turns), max_tokens)

    return compress
