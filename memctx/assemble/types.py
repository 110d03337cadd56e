"""What get_working_context returns: messages, per-section accounting, sources, what was cut.

Owns: the frozen result types, their JSON form and their row in the context request log. No logic.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal, Mapping
from uuid import UUID

from memctx.web.types import SearchReport
from memctx.store.requests import ContextRequest
from memctx.tokens import REPLY_PRIMING, TokenCounter, messages_tokens

SourceKind = Literal["message", "summary", "board", "external", "profile", "procedure"]


@dataclass(frozen=True)
class Source:
    """Where one included item came from."""

    kind: SourceKind
    id: UUID | str
    section: str
    external_id: str | None = None
    conversation_id: UUID | None = None
    seq: int | None = None
    first_seq: int | None = None  # summaries: the message range covered
    last_seq: int | None = None
    detail: str | None = None  # e.g. "master", "key_facts", "compressed"; an external result's title
    url: str | None = None  # external results
    learned_from: tuple[str, ...] = ()  # a profile item or procedure: the ids of the messages it came from

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "id": str(self.id), "section": self.section,
                               "external_id": self.external_id}
        if self.conversation_id is not None:
            out["conversation_id"] = str(self.conversation_id)
        for key in ("seq", "first_seq", "last_seq", "detail", "url"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.learned_from:
            out["learned_from"] = list(self.learned_from)
        return out


@dataclass(frozen=True)
class SectionReport:
    """Tokens a section was allowed and used (exact, in chat messages incl. per-message overhead)."""

    name: str
    budget: int
    tokens: int
    items: int

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "budget": self.budget, "tokens": self.tokens, "items": self.items}


@dataclass(frozen=True)
class Cut:
    """An item left out (dropped) or replaced by a summary (compressed), and why."""

    action: Literal["dropped", "compressed"]
    section: str
    kind: str
    ids: tuple[str, ...]
    reason: str
    tokens: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"action": self.action, "section": self.section, "kind": self.kind, "ids": list(self.ids),
                "reason": self.reason, "tokens": self.tokens}


@dataclass(frozen=True)
class WorkingContext:
    """Chat-completions messages within `budget` tokens, and the account of how they were built."""

    mode: Literal["memctx", "status_quo"]
    messages: list[dict[str, str]]
    budget: int
    tokens: int
    sections: list[SectionReport] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    cuts: list[Cut] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    external: SearchReport | None = None  # the external search's decision and results (None: off)
    today: date | None = None  # the day the context tells the model it is (None: it says none)
    # The system prompt's tokens as its own message, without the day's line (0: no prompt): what a
    # client sending its whole history sends too
    prompt_tokens: int = 0

    @property
    def text(self) -> str:
        """All message contents, joined (what the model reads, without roles)."""
        return "\n".join(m["content"] for m in self.messages)

    @property
    def dropped(self) -> list[Cut]:
        return [c for c in self.cuts if c.action == "dropped"]

    @property
    def compressed(self) -> list[Cut]:
        return [c for c in self.cuts if c.action == "compressed"]

    def log_entry(self, counter: TokenCounter, *, user_id: UUID, conversation_id: UUID,
                  kind: Literal["context", "proxy", "shadow"], query_stored_at: int | None = None, model: str | None = None,
                  timings_ms: Mapping[str, float] | None = None, upstream_status: int | None = None) -> ContextRequest:
        """Its row in the context request log. `query_stored_at` is the seq of the stored query
        message (the proxy stores it): the history then counts it, up to that seq. What the
        history is weighed with: the system prompt the caller gave (not the day's line, which the
        context adds), the reply priming and the query."""
        query = self.messages[-1]
        fixed = self.prompt_tokens + (REPLY_PRIMING if query_stored_at is not None
                                      else messages_tokens(counter, [query]))
        return ContextRequest(user_id=user_id, conversation_id=conversation_id, kind=kind, token_budget=self.budget,
                              tokens_used=self.tokens, fixed_tokens=fixed,
                              timings_ms={**self.timings_ms, **(timings_ms or {})},
                              sources=dict(Counter(s.kind for s in self.sources)), model=model,
                              through_seq=query_stored_at, upstream_status=upstream_status)

    def as_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "budget": self.budget, "tokens": self.tokens, "messages": self.messages,
                "sections": [s.as_json() for s in self.sections], "sources": [s.as_json() for s in self.sources],
                "dropped": [c.as_json() for c in self.dropped], "compressed": [c.as_json() for c in self.compressed],
                "timings_ms": self.timings_ms, "today": self.today.isoformat() if self.today else None,
                **({"external_search": self.external.as_json()} if self.external is not None else {})}
