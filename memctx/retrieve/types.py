"""What memory search returns: memories made of fragments, with similarity and provenance.

Owns: the frozen result types. A `Memory` is one search hit with what belongs with it (its
paired turn, optional temporal neighbours), or one summary alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Mapping
from uuid import UUID

from memctx.retrieve.signals import SIGNALS

MemoryKind = Literal["message", "summary", "conversation_summary"]


@dataclass(frozen=True)
class Fragment:
    """One stored message (or one summary text) inside a memory."""

    id: UUID
    conversation_id: UUID
    role: str
    text: str
    seq: int | None
    time: datetime | None
    external_id: str | None = None
    speaker: str | None = None
    token_count: int = 0
    session: int | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "Fragment":
        return cls(id=row["id"], conversation_id=row["conversation_id"], role=row["role"], text=row["text"],
                   seq=row["seq"], time=row["created_at"], external_id=row["external_id"],
                   speaker=row["speaker"], token_count=int(row["token_count"] or 0), session=row["session"])

    @property
    def who(self) -> str:
        return self.speaker or self.role


@dataclass(frozen=True)
class Provenance:
    """Why a memory was returned: its rank in each signal's candidate list (None = not in it)."""

    ranks: Mapping[str, int | None] = field(default_factory=dict)
    speaker_match: bool = False
    first_seq: int | None = None
    last_seq: int | None = None

    @property
    def matched_by(self) -> list[str]:
        return [s.name for s in SIGNALS if self.ranks.get(s.name) is not None]

    def as_json(self) -> dict[str, Any]:
        return {**{s.rank_column: self.ranks.get(s.name) for s in SIGNALS},
                "speaker_match": self.speaker_match, "matched_by": self.matched_by,
                "first_seq": self.first_seq, "last_seq": self.last_seq}


@dataclass(frozen=True)
class Memory:
    """A search result: the hit's id, its fragments in conversation order, score and provenance."""

    kind: MemoryKind
    id: UUID
    conversation_id: UUID
    fragments: tuple[Fragment, ...]
    score: float
    similarity: float | None
    provenance: Provenance = field(default_factory=Provenance)

    @property
    def text(self) -> str:
        return "\n".join(f.text for f in self.fragments)

    @property
    def token_count(self) -> int:
        return sum(f.token_count for f in self.fragments)

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "id": str(self.id), "conversation_id": str(self.conversation_id),
            "score": self.score, "similarity": self.similarity, "provenance": self.provenance.as_json(),
            "fragments": [{"id": str(f.id), "role": f.role, "speaker": f.speaker, "text": f.text, "seq": f.seq,
                           "time": f.time.isoformat() if f.time else None, "external_id": f.external_id}
                          for f in self.fragments],
        }
