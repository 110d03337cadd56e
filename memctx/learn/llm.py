"""The LLM learner: the profile prompt sent to the configured chat model, its reply validated.

Owns: `LLMLearner`, used when the summarizer is the LLM one (it asks through that summarizer's
client, `complete`: JSON mode, a reply cut at its limit refused). The reply must validate against
`ProfileResponse`; then each item must cite a message of the batch, said by the person the item
is about (an item that does not is dropped and counted: `unsourced`). A reply that fails (HTTP
error, timeout, invalid JSON, wrong schema) is not used at all: the batch is learned by the
fallback (the extractive learner), the failure counted by kind.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from typing import Any, Callable, Protocol, Sequence

from memctx.learn.prompts import ProfileResponse, profile_prompt
from memctx.learn.topics import TOPIC_WORDS, topic_of
from memctx.learn.types import Candidate, Learner, ProfileItem, Said
from memctx.summarize.llm import LLMFailure

log = logging.getLogger(__name__)

# Room for the reply: ~60 tokens an item, a few items per message.
REPLY_TOKENS_PER_MESSAGE = 160
MIN_REPLY_TOKENS = 512


class Completes(Protocol):
    """A chat model asked for JSON validated as a response model (`LLMSummarizer.complete`)."""

    def complete(self, messages: list[dict[str, str]], model: Any, *, reply_tokens: int) -> Any: ...


class LLMLearner:
    """A `Learner` backed by a chat model, with a learner to fall back on."""

    def __init__(self, model: Completes, fallback: Learner, *, name: str = "llm",
                 on_failure: Callable[[str], None] | None = None) -> None:
        self.model = model
        self.fallback = fallback
        self.name = name
        self.on_failure = on_failure
        self.calls = 0
        self.fallbacks = 0
        self.unsourced = 0
        self.failures: Counter[str] = Counter()
        self._lock = threading.Lock()

    def learn(self, messages: Sequence[Said], known: Sequence[ProfileItem] = ()) -> list[Candidate]:
        speaking = [m for m in messages if m.person is not None and m.text.strip()]
        if not speaking:
            return []
        with self._lock:
            self.calls += 1
        reply_tokens = max(MIN_REPLY_TOKENS, REPLY_TOKENS_PER_MESSAGE * len(speaking))
        try:
            reply = self.model.complete(profile_prompt(speaking, known), ProfileResponse, reply_tokens=reply_tokens)
        except LLMFailure as failure:
            with self._lock:
                self.fallbacks += 1
                self.failures[failure.kind] += 1
            log.warning("LLM profile learning failed (%s); using %s instead", failure, self.fallback.name)
            if self.on_failure is not None:
                self.on_failure(failure.kind)
            return self.fallback.learn(messages, known)
        return self._candidates(reply, speaking)

    def _candidates(self, reply: ProfileResponse, messages: Sequence[Said]) -> list[Candidate]:
        by_seq = {m.seq: m for m in messages}
        out, dropped = [], 0
        for item in reply.items:
            message = by_seq.get(item.source)
            if message is None or message.person is None or item.person.casefold() != message.person.casefold():
                dropped += 1  # cites no message of the batch, or another person's
                continue
            topic = item.topic.lower() if item.topic.lower() in TOPIC_WORDS else topic_of(item.value)
            out.append(Candidate(message, message.person, item.kind, item.subject.lower() or "self", topic,
                                 item.value, item.slot.lower(), explicit=item.explicit, correction=item.correction))
        if dropped:
            with self._lock:
                self.unsourced += dropped
        return out

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"calls": self.calls, "fallbacks": self.fallbacks, "failures": dict(self.failures),
                    "unsourced_items": self.unsourced}
