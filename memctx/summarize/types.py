"""The values every summarizer reads and writes, and the `Summarizer` seam.

Owns: `SourceText` (what a summarizer reads), `SummaryDraft` (what it returns), the board's one
definition (`SECTIONS`), `Board` with its `BoardItem`s and their sources (and the jsonb round
trip), and the `Summarizer` protocol. No logic beyond construction and serialization lives here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal, Protocol
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
    external_id: str | None = None

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
                   created_at=message.created_at, level=0, external_id=message.external_id)

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


# The board ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Section:
    """One list of the summary board. `SECTIONS` is the one definition that storage (the jsonb
    `items` column), the rules' caps, the LLM prompt and reply model, the CLI and the context
    read; adding a section is one entry here plus the rule or prompt that fills it.

    `cap` bounds the list (per kind when `grouped_by` is "kind"); `grouped_by` is how the JSON
    view groups it ("person": the speaker an item came from, named once per group and not in the
    items' text; "kind": an entity's kind); `kept`
    items survive every update (only the cap drops the oldest); `prompt` tells the LLM what
    belongs in it.
    """

    name: str
    title: str
    cap: int
    prompt: str
    grouped_by: Literal["person", "kind"] | None = None
    kept: bool = False


SECTIONS: tuple[Section, ...] = (
    Section("key_facts", "Key facts", 30, 'up to 30 short facts, each "Name: fact", newest last.',
            grouped_by="person"),
    Section("entities", "Entities", 50, '{"people": [...], "places": [...], "organizations": [...], '
            '"other": [...]}, most mentioned first.', grouped_by="kind"),
    Section("topics", "Topics", 10, "up to 10 short topics, most discussed first."),
    Section("action_items", "Action items", 20,
            'plans, promises and reminders still open, each with who does what ("Name: what"), up to 20.'),
    Section("pending_questions", "Pending questions", 20,
            'questions nobody has answered yet ("Name: question"). A question is answered once someone '
            "else replies after it; drop answered ones."),
    Section("constraints", "Constraints and preferences", 50,
            'stated preferences, standing instructions and corrections ("Name: what"). Keep every previous '
            "constraint unless a correction replaces it, and add the new ones.", kept=True),
)
SECTION: Mapping[str, Section] = {s.name: s for s in SECTIONS}


@dataclass(frozen=True)
class ItemSource:
    """A message a board item came from: its id, and the caller's own id for it if any."""

    id: UUID
    external_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": str(self.id), "external_id": self.external_id}

    @classmethod
    def from_json(cls, data: Any) -> "ItemSource | None":
        try:
            return cls(UUID(str(data["id"])), str(data["external_id"]) if data.get("external_id") else None)
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    @classmethod
    def of(cls, source: SourceText) -> "ItemSource":
        return cls(source.id, source.external_id)


@dataclass(frozen=True)
class BoardItem:
    """One line of a board section and the messages it came from.

    `group` is the person a fact came from or an entity's kind; `edited` marks a line a person
    rewrote (its sources stay); `weight` is how much its source said (the number of facts of its
    message, for key facts): a full section drops its lightest items first, oldest first.
    """

    text: str
    sources: tuple[ItemSource, ...] = ()
    group: str | None = None
    edited: bool = False
    weight: int = 0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"text": self.text, "sources": [s.to_json() for s in self.sources]}
        if self.group is not None:
            data["group"] = self.group
        if self.edited:
            data["edited"] = True
        if self.weight:
            data["weight"] = self.weight
        return data

    @staticmethod
    def text_of(data: Any) -> str | None:
        """The text of an item's json (or of a bare string), None when it holds no item."""
        if isinstance(data, (str, int, float)):
            return str(data) if str(data).strip() else None
        if not isinstance(data, Mapping) or not str(data.get("text") or "").strip():
            return None
        return str(data["text"])

    @classmethod
    def from_json(cls, data: Any) -> "BoardItem | None":
        """An item from its json, or from a bare string (boards written before items had sources)."""
        text = cls.text_of(data)
        if text is None or not isinstance(data, Mapping):
            return None if text is None else cls(text)
        raw = data.get("sources")
        sources = tuple(s for s in (ItemSource.from_json(r) for r in (raw if isinstance(raw, list) else [])) if s)
        group = data.get("group")
        weight = data.get("weight")
        return cls(text, sources, str(group) if group else None, bool(data.get("edited")),
                   int(weight) if isinstance(weight, (int, float)) else 0)


def _items(value: Any) -> tuple[BoardItem, ...]:
    if not isinstance(value, (list, tuple)):
        return ()
    return tuple(i for i in (BoardItem.from_json(v) for v in value) if i is not None)


def _legacy_entities(value: Any) -> list[Any]:
    """Entities stored as {kind: [names]} (before items): as items grouped by kind."""
    if not isinstance(value, Mapping):
        return value if isinstance(value, list) else []
    return [{"text": name, "group": kind} for kind in ENTITY_KINDS for name in _str_list(value.get(kind))]


def _empty_items() -> dict[str, tuple[BoardItem, ...]]:
    return {s.name: () for s in SECTIONS}


@dataclass(frozen=True)
class Board:
    """The per-conversation summary board, updated incrementally as messages arrive.

    `items` holds one tuple of `BoardItem`s per entry of `SECTIONS`. `constraints` holds stated
    preferences and corrections that later summaries must not lose. `entity_counts` and
    `topic_counts` are the tallies that order entities and topics; they are kept so an
    incremental update ranks by the whole conversation, not the last batch.
    """

    summary: str = ""
    items: Mapping[str, tuple[BoardItem, ...]] = field(default_factory=_empty_items)
    message_count: int = 0
    last_seq: int = 0
    entity_counts: dict[str, int] = field(default_factory=dict)
    topic_counts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> "Board":
        return cls()

    def section(self, name: str) -> tuple[BoardItem, ...]:
        return tuple(self.items.get(SECTION[name].name, ()))

    def texts(self, name: str) -> list[str]:
        """A section's lines, each on its own: items grouped per person say who ("Name: fact")."""
        if SECTION[name].grouped_by == "person":
            return [person_line(item) for item in self.section(name)]
        return [item.text for item in self.section(name)]

    def __getattr__(self, name: str) -> Any:
        """`board.key_facts`, `board.constraints`, …: a section's texts; `board.entities`: entity
        names per kind, most mentioned first."""
        if name == "entities":
            return {kind: [i.text for i in self.section(name) if i.group == kind] for kind in ENTITY_KINDS}
        if name in SECTION:
            return self.texts(name)
        raise AttributeError(name)

    def to_json(self) -> dict[str, Any]:
        """A plain dict for storage; `from_json(to_json())` gives back an equal board."""
        return {
            "summary": self.summary,
            "items": {s.name: [_stored(i, s) for i in self.section(s.name)] for s in SECTIONS},
            "message_count": self.message_count,
            "last_seq": self.last_seq,
            "counts": {"entities": dict(self.entity_counts), "topics": dict(self.topic_counts)},
        }

    def texts_json(self) -> dict[str, Any]:
        """The board as plain text lists (entities by kind), as an LLM reads and writes it."""
        return {"summary": self.summary,
                **{s.name: self.entities if s.name == "entities" else self.texts(s.name) for s in SECTIONS}}

    def view_json(self) -> dict[str, Any]:
        """The board as people and tools read it: every item with its sources, facts grouped per
        person and entities per kind (`memctx board --json`)."""
        view: dict[str, Any] = {"summary": self.summary}
        for spec in SECTIONS:
            items = self.section(spec.name)
            if spec.grouped_by is None:
                view[spec.name] = [_shown(i) for i in items]
                continue
            groups: dict[str, list[dict[str, Any]]] = {kind: [] for kind in ENTITY_KINDS} if spec.grouped_by == "kind" else {}
            for item in items:
                groups.setdefault(item.group or "", []).append(_shown(item))
            view[spec.name] = groups
        view.update(message_count=self.message_count, last_seq=self.last_seq)
        return view

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> "Board":
        """Read a stored board; missing or malformed fields read as empty, never as an error.
        Boards stored before items (sections as top-level lists of strings) read too."""
        if not data:
            return cls()
        raw_items = data.get("items")
        if not isinstance(raw_items, Mapping):
            raw_items = {s.name: data.get(s.name) for s in SECTIONS}
        counts: Mapping[str, Any] = data.get("counts") or {}
        if not isinstance(counts, Mapping):
            counts = {}
        items = {s.name: _items(_legacy_entities(raw_items.get(s.name)) if s.name == "entities"
                                else raw_items.get(s.name)) for s in SECTIONS}
        items.update({s.name: tuple(map(unprefixed, items[s.name])) for s in SECTIONS if s.grouped_by == "person"})
        return cls(
            summary=str(data.get("summary") or ""),
            items=items,
            message_count=int(data.get("message_count") or 0),
            last_seq=int(data.get("last_seq") or 0),
            entity_counts=_int_map(counts.get("entities")),
            topic_counts=_int_map(counts.get("topics")),
        )


def person_line(item: BoardItem) -> str:
    """An item of a section grouped per person as a line of its own: "Name: text" (as it is when
    its text already says who, as a person's edit may)."""
    if not item.group or item.text.startswith(f"{item.group}: "):
        return item.text
    return f"{item.group}: {item.text}"


def unprefixed(item: BoardItem) -> BoardItem:
    """An item of a section grouped per person with its person in `group`, not in its text: items
    stored as "Name: fact" (before facts were grouped, or written so by an LLM or a person) lose
    the prefix, which becomes the group if there was none."""
    head, sep, rest = item.text.partition(": ")
    if not sep or not rest.strip() or len(head) > 60 or (item.group and head != item.group):
        return item
    return replace(item, text=rest.strip(), group=item.group or head)


def _stored(item: BoardItem, spec: Section) -> dict[str, Any]:
    """An item as stored: in a section grouped per person its text says who ("Name: fact"), as the
    readers of the stored lines (the working context's query, older boards) expect; `from_json`
    takes the name back out into the group."""
    data = item.to_json()
    if spec.grouped_by == "person":
        data["text"] = person_line(item)
    return data


def _shown(item: BoardItem) -> dict[str, Any]:
    data = {"text": item.text, "sources": [s.to_json() for s in item.sources]}
    if item.edited:
        data["edited"] = True
    return data


class Summarizer(Protocol):
    """Writes summaries of chain elements and keeps the summary board up to date.

    `sources` come in chain order (oldest first). `previous` is the current master text when a
    master is being updated. A draft never exceeds `max_tokens` tokens.
    """

    name: str

    def summarize(self, sources: Sequence[SourceText], *, level: int, is_master: bool, max_tokens: int,
                  previous: str | None = None) -> SummaryDraft: ...

    def update_board(self, board: Board, new_messages: Sequence[SourceText], *, max_tokens: int) -> Board: ...
