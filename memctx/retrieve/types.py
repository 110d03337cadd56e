"""What memory search returns: memories made of fragments, with similarity and provenance.

Owns: the frozen result types. A `Memory` is one search hit with what belongs with it (its
paired turn, optional temporal neighbours), or one summary alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Mapping
from uuid import UUID

from memctx.frozen import frozen_new
from memctx.retrieve.signals import SIGNALS

MemoryKind = Literal["message", "summary", "conversation_summary"]


@dataclass(frozen=True)
class Passage:
    """The passage of a long message most similar to the query (migration 0022)."""

    id: UUID
    text: str
    token_count: int


@dataclass(frozen=True)
class Fragment:
    """One stored message (or one summary text) inside a memory. A long message carries its
    best passage (`passage`); its `excerpt()` is the fragment that shows only that passage."""

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
    passage: Passage | None = None
    excerpt_of: int | None = None  # an excerpt: the tokens of the whole message it is a passage of

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "Fragment":
        passage = None
        if row.get("passage_id") is not None:
            passage = Passage(row["passage_id"], row["passage_text"], int(row["passage_tokens"] or 0))
        # ~150 per search: without the frozen __init__ (memctx.frozen)
        return frozen_new(cls, {"id": row["id"], "conversation_id": row["conversation_id"], "role": row["role"],
                                "text": row["text"], "seq": row["seq"], "time": row["created_at"],
                                "external_id": row["external_id"], "speaker": row["speaker"],
                                "token_count": int(row["token_count"] or 0), "session": row["session"],
                                "passage": passage})

    def excerpt(self) -> "Fragment":
        """This message shown as its passage: same id (its source), the passage's text and tokens."""
        if self.passage is None:
            raise ValueError(f"message {self.id} has no passage")
        # one per long turn per fill: without dataclasses.replace (memctx.frozen)
        return frozen_new(Fragment, {**self.__dict__, "text": self.passage.text,
                                     "token_count": self.passage.token_count, "passage": None,
                                     "excerpt_of": self.token_count})

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
                           "time": f.time.isoformat() if f.time else None, "external_id": f.external_id,
                           **({"passage": {"id": str(f.passage.id), "text": f.passage.text,
                                           "tokens": f.passage.token_count}} if f.passage else {})}
                          for f in self.fragments],
        }
