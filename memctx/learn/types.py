"""The values the learning layer reads and writes, and the `Learner` seam.

Owns: `Said` (a message as learning reads it), `Candidate` (one thing a learner found in one
message), `ProfileItem` and its `ItemSource`s (what the profile holds, read from the database),
`Procedure` (a tool's error and the later call that worked), the kinds, topics' names and ratings,
and the `Learner` protocol. No logic beyond construction and serialization lives here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Mapping, Protocol, Sequence
from uuid import UUID

Kind = Literal["fact", "preference", "instruction", "plan"]
KINDS: tuple[Kind, ...] = ("fact", "preference", "instruction", "plan")
Status = Literal["active", "replaced", "deleted"]
Rating = Literal["useful", "wrong", "outdated"]
RATINGS: tuple[Rating, ...] = ("useful", "wrong", "outdated")
TargetKind = Literal["profile_item", "message", "summary", "procedure"]
TARGET_KINDS: tuple[TargetKind, ...] = ("profile_item", "message", "summary", "procedure")
SELF = "self"  # the subject of an item about the person themselves
USER = "user"  # the person of an unnamed user's messages


@dataclass(frozen=True)
class Said:
    """One message as learning reads it: who said it (a speaker's name, else the role), its text
    and typed blocks (tool calls and results), when, and where it is."""

    id: UUID
    conversation_id: UUID
    seq: int
    role: str
    speaker: str | None
    text: str
    created_at: datetime
    external_id: str | None = None
    blocks: tuple[Mapping[str, Any], ...] = ()

    @property
    def person(self) -> str | None:
        """Whose profile this message speaks for: its speaker, or the unnamed user; None for an
        unnamed assistant, tool or system (they say nothing about a person of their own)."""
        if self.speaker:
            return self.speaker
        return USER if self.role == "user" else None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "Said":
        content = row.get("content")
        return cls(id=row["id"], conversation_id=row["conversation_id"], seq=row["seq"], role=row["role"],
                   speaker=row.get("speaker") or None, text=row["text"], created_at=row["created_at"],
                   external_id=row.get("external_id"),
                   blocks=tuple(content) if isinstance(content, list) else ())


@dataclass(frozen=True)
class Candidate:
    """One thing a learner found in one message (`source`): a learned item's proposal.

    `attribute` names a slot that holds one value at a time (home, job, age, diet …; '' when the
    item is one of many, such as a pet or a hobby): a new explicit value of the same person,
    subject and slot replaces the old one. `correction`: the message corrects something said
    before. `explicit`: said outright, not inferred from behaviour."""

    source: Said
    person: str
    kind: Kind
    subject: str
    topic: str
    value: str
    attribute: str = ""
    explicit: bool = True
    correction: bool = False

    @property
    def key(self) -> str:
        return item_key(self.person, self.subject, self.topic, self.attribute)


def item_key(person: str, subject: str, topic: str, attribute: str) -> str:
    return f"{person}|{subject}|{topic}|{attribute}"


def attribute_of(key: str) -> str:
    return key.rsplit("|", 1)[-1]


@dataclass(frozen=True)
class ItemSource:
    """A message an item was learned from."""

    message_id: UUID
    conversation_id: UUID
    said_at: datetime
    external_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"message_id": str(self.message_id), "conversation_id": str(self.conversation_id),
                "said_at": self.said_at.isoformat(), "external_id": self.external_id}


@dataclass(frozen=True)
class ProfileItem:
    """One item of a user's profile as stored (memctx.profile_items), with its sources."""

    id: UUID
    person: str
    kind: Kind
    subject: str
    topic: str
    key: str
    value: str
    explicit: bool
    status: Status
    origin: str
    confidence: float
    seen_count: int
    overrides: int
    useful: int
    first_seen: datetime
    last_seen: datetime
    replaced_by: UUID | None = None
    replaced_at: datetime | None = None
    edited_at: datetime | None = None
    deleted_at: datetime | None = None
    challenger: Mapping[str, Any] | None = None
    sources: tuple[ItemSource, ...] = ()

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "ProfileItem":
        values = {k: row[k] for k in cls.__dataclass_fields__ if k in row and k != "sources"}
        return cls(**values, sources=tuple(sorted(sources_of(row), key=lambda s: s.said_at)))

    @property
    def attribute(self) -> str:
        return attribute_of(self.key)

    def as_json(self) -> dict[str, Any]:
        return {"id": str(self.id), "person": self.person, "kind": self.kind, "subject": self.subject,
                "topic": self.topic, "value": self.value, "explicit": self.explicit, "status": self.status,
                "origin": self.origin, "confidence": round(self.confidence, 3), "seen_count": self.seen_count,
                "overrides": self.overrides, "useful": self.useful, "first_seen": self.first_seen.isoformat(),
                "last_seen": self.last_seen.isoformat(),
                "replaced_by": str(self.replaced_by) if self.replaced_by else None,
                "replaced_at": self.replaced_at.isoformat() if self.replaced_at else None,
                "edited_at": self.edited_at.isoformat() if self.edited_at else None,
                "sources": [s.as_json() for s in self.sources]}


def _when(value: Any) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def sources_of(row: Mapping[str, Any]) -> tuple[ItemSource, ...]:
    """The sources of a stored item or procedure, as the query aggregates them (JSON objects)."""
    return tuple(ItemSource(UUID(str(s["message_id"])), UUID(str(s["conversation_id"])), _when(s["said_at"]),
                            s.get("external_id"))
                 for s in (row.get("sources") or ()))


@dataclass(frozen=True)
class ProcedureCandidate:
    """A tool's error and what came after it in one conversation: the first failing call of an
    episode (`error_message`) and the later successful call of the same tool (`fix_message`,
    None while none came)."""

    tool: str
    error: str
    fix: str | None
    error_message: Said
    fix_message: Said | None = None


@dataclass(frozen=True)
class Procedure:
    """What worked after a tool's error, as stored (memctx.procedures)."""

    id: UUID
    tool: str
    error: str
    fix: str
    seen_count: int
    resolved: int
    useful: int
    first_seen: datetime
    last_seen: datetime
    sources: tuple[ItemSource, ...] = field(default=())

    @property
    def success_rate(self) -> float | None:
        return self.resolved / self.seen_count if self.seen_count else None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "Procedure":
        values = {k: row[k] for k in cls.__dataclass_fields__ if k in row and k != "sources"}
        return cls(**values, sources=sources_of(row))

    def as_json(self) -> dict[str, Any]:
        return {"id": str(self.id), "tool": self.tool, "error": self.error, "fix": self.fix,
                "seen_count": self.seen_count, "resolved": self.resolved,
                "success_rate": None if self.success_rate is None else round(self.success_rate, 3),
                "first_seen": self.first_seen.isoformat(), "last_seen": self.last_seen.isoformat(),
                "sources": [s.as_json() for s in self.sources]}


class Learner(Protocol):
    """Finds what a batch of messages says about the people in them. `known` is the profile as it
    stands (an LLM learner reads it to say what a message replaces); the extractive one reads
    only the messages."""

    name: str

    def learn(self, messages: Sequence[Said], known: Sequence[ProfileItem]) -> list[Candidate]: ...
