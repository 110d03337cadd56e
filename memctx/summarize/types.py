"""The values every summarizer reads and writes, and the `Summarizer` seam.

Owns: `SourceText` (what a summarizer reads), `SummaryDraft` (what it returns), `Board` (the
per-conversation summary board with its jsonb round trip) and the `Summarizer` protocol. No
logic beyond construction and serialization lives here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Mapping, Protocol, Sequence
from uuid import UUID

from memctx.models import Message, Summary

ENTITY_KINDS = ("people", "places", "organizations", "other")


@dataclass(frozen=True)
class SourceText:
    """One message or summary as a summarizer sees it.

    `speaker` is a display name ("Caroline"); when it is None the role stands in for it.
    `created_at` is when a message was said. For a summary it is the time of its newest message
    if the caller knows it; a date header at the top of a summary's text takes precedence, so a
    summary's own row time (when the worker wrote it) should not be passed here.
    """

    id: UUID
    kind: Literal["message", "summary"]
    role: str | None
    speaker: str | None
    text: str
    first_seq: int
    last_seq: int
    created_at: datetime | None = None
    level: int = 0

    @property
    def who(self) -> str | None:
        """The name a sentence of this source is attributed to (speaker, else role)."""
        return self.speaker or self.role

    @classmethod
    def from_message(cls, message: Message) -> "SourceText":
        speaker = message.metadata.get("speaker") if message.metadata else None
        return cls(id=message.id, kind="message", role=message.role,
                   speaker=str(speaker) if speaker else None, text=message.text,
                   first_seq=message.seq, last_seq=message.seq,
                   created_at=message.created_at, level=0)

    @classmethod
    def from_summary(cls, summary: Summary) -> "SourceText":
        # Summary.created_at is when the worker wrote it, not when its messages were said:
        # the summary's own date header carries the conversation dates.
        return cls(id=summary.id, kind="summary", role=None, speaker=None, text=summary.content,
                   first_seq=summary.first_seq, last_seq=summary.last_seq,
                   created_at=None, level=summary.level)


@dataclass(frozen=True)
class SummaryDraft:
    """A summary ready to store: its text, exact token count and who wrote it."""

    content: str
    token_count: int
    summarizer: str
    fallback: bool = False


def _str_list(value: Any) -> list[str]:
    if not isinstance(value, (list, tuple)):
        return []
    return [str(v) for v in value if isinstance(v, (str, int, float)) and str(v).strip()]


def _int_map(value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): int(v) for k, v in value.items() if isinstance(v, (int, float))}


def _empty_entities() -> dict[str, list[str]]:
    return {kind: [] for kind in ENTITY_KINDS}


@dataclass(frozen=True)
class Board:
    """The per-conversation summary board, updated incrementally as messages arrive.

    `constraints` holds stated preferences and corrections that later summaries must not lose.
    `entity_counts` and `topic_counts` are the tallies that order `entities` and `topics`; they
    are kept so an incremental update ranks by the whole conversation, not the last batch.
    """

    summary: str = ""
    key_facts: list[str] = field(default_factory=list)
    entities: dict[str, list[str]] = field(default_factory=_empty_entities)
    topics: list[str] = field(default_factory=list)
    action_items: list[str] = field(default_factory=list)
    pending_questions: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    message_count: int = 0
    last_seq: int = 0
    entity_counts: dict[str, int] = field(default_factory=dict)
    topic_counts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> "Board":
        return cls()

    def to_json(self) -> dict[str, Any]:
        """A plain dict for a jsonb column; `from_json(to_json())` gives back an equal board."""
        return {
            "summary": self.summary,
            "key_facts": list(self.key_facts),
            "entities": {kind: list(self.entities.get(kind, [])) for kind in ENTITY_KINDS},
            "topics": list(self.topics),
            "action_items": list(self.action_items),
            "pending_questions": list(self.pending_questions),
            "constraints": list(self.constraints),
            "message_count": self.message_count,
            "last_seq": self.last_seq,
            "counts": {"entities": dict(self.entity_counts), "topics": dict(self.topic_counts)},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> "Board":
        """Read a stored board; missing or malformed fields read as empty, never as an error."""
        if not data:
            return cls()
        raw_entities: Mapping[str, Any] = data.get("entities") or {}
        counts: Mapping[str, Any] = data.get("counts") or {}
        if not isinstance(raw_entities, Mapping):
            raw_entities = {}
        if not isinstance(counts, Mapping):
            counts = {}
        return cls(
            summary=str(data.get("summary") or ""),
            key_facts=_str_list(data.get("key_facts")),
            entities={kind: _str_list(raw_entities.get(kind)) for kind in ENTITY_KINDS},
            topics=_str_list(data.get("topics")),
            action_items=_str_list(data.get("action_items")),
            pending_questions=_str_list(data.get("pending_questions")),
            constraints=_str_list(data.get("constraints")),
            message_count=int(data.get("message_count") or 0),
            last_seq=int(data.get("last_seq") or 0),
            entity_counts=_int_map(counts.get("entities")),
            topic_counts=_int_map(counts.get("topics")),
        )


class Summarizer(Protocol):
    """Writes summaries of chain elements and keeps the summary board up to date.

    `sources` come in chain order (oldest first). `previous` is the current master text when a
    master is being updated. A draft never exceeds `max_tokens` tokens.
    """

    name: str

    def summarize(
        self,
        sources: Sequence[SourceText],
        *,
        level: int,
        is_master: bool,
        max_tokens: int,
        previous: str | None = None,
    ) -> SummaryDraft: ...

    def update_board(self, board: Board, new_messages: Sequence[SourceText], *, max_tokens: int) -> Board: ...
