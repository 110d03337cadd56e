"""How what was learned joins the profile: sightings, replacements, inferences that must earn it.
Pure: the profile as it stands plus the candidates of a batch → the items to insert and update.

Rules, applied to the candidates in the order they were said:

- **Once per message.** A candidate whose message is already a source of an item saying the same
  (or of the same slot) changes nothing: learning a message again, after a crash or a
  regeneration, learns nothing twice. A sighting counts one source message, so an item's
  `seen_count` is the number of messages that said it.
- **The person's word sticks.** An item deleted or rated wrong (a tombstone) is never learned
  again: a candidate saying the same of the same person is dropped. An item the person edited
  keeps their words against its own sources.
- **Seen again.** The same thing said again (same person and subject, most words shared) adds
  its message to the item: seen once more, last seen then, more confident.
- **What is said outright wins at once.** An explicit value for a one-value slot (where someone
  lives, their job, age, diet, name …) of the same person and subject replaces the current one;
  so does a correction ("actually, …"), of the item of the same person sharing most of its words
  or their slot, and a statement that says the same as an item with other numbers ("I've read 220
  pages" after "I've read 120 pages"). The old item stays, marked replaced, with the date and what
  replaced it.
- **What is inferred must earn it.** An inferred value (`explicit=False`) that conflicts with an
  item is an override: the item's confidence falls, and the competing value is counted (its
  `challenger`). Only `OVERRIDES_TO_CHANGE` overrides in a row, with no sighting of the current
  value between them, replace it. A consistent sighting raises the confidence and clears them.

Confidence: an explicit item 0.9, +0.02 per further sighting (at most 0.99), a correction 0.95;
an inferred one 1 − 0.5^seen, −0.15 per standing override (at least 0.05).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, Iterable, Sequence
from uuid import UUID, uuid4

from memctx.learn.types import Candidate, ItemSource, ProfileItem
from memctx.summarize.board import said_slots
from memctx.words import STOPWORDS, words

OVERRIDES_TO_CHANGE = 2
SAME = 0.6  # share of content words two values must have in common to say the same thing
CHALLENGER_SOURCES = 5

_NUMBER = re.compile(r"\d[\d,.:]*")


@dataclass
class Draft:
    """An item while a batch is merged into the profile: stored ones as read, new ones as made."""

    id: UUID
    person: str
    kind: str
    subject: str
    topic: str
    key: str
    value: str
    explicit: bool
    status: str
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
    challenger: dict[str, Any] | None = None
    sources: dict[UUID, ItemSource] = field(default_factory=dict)
    new: bool = False
    changed: bool = False
    added: list[ItemSource] = field(default_factory=list)  # sources to store

    @classmethod
    def of(cls, item: ProfileItem) -> "Draft":
        stored = {k: getattr(item, k) for k in cls.__dataclass_fields__ if k in ProfileItem.__dataclass_fields__
                  and k not in ("sources", "challenger")}
        return cls(**stored, challenger=dict(item.challenger) if item.challenger else None,
                   sources={s.message_id: s for s in item.sources})

    @classmethod
    def learned(cls, candidate: Candidate, *, confidence: float | None = None) -> "Draft":
        source = source_of(candidate)
        draft = cls(id=uuid4(), person=candidate.person, kind=candidate.kind, subject=candidate.subject,
                    topic=candidate.topic, key=candidate.key, value=candidate.value, explicit=candidate.explicit,
                    status="active", origin="learned", confidence=0.0, seen_count=1, overrides=0, useful=0,
                    first_seen=source.said_at, last_seen=source.said_at, sources={source.message_id: source},
                    new=True, changed=True, added=[source])
        draft.confidence = confidence if confidence is not None else draft.rated()
        return draft

    @property
    def active(self) -> bool:
        return self.status == "active"

    @property
    def attribute(self) -> str:
        return self.key.rsplit("|", 1)[-1]

    def rated(self) -> float:
        """The confidence its sightings and standing overrides give it (module docstring)."""
        if self.explicit:
            return min(0.99, 0.9 + 0.02 * max(0, self.seen_count - 1))
        return max(0.05, min(0.95, 1 - 0.5 ** max(1, self.seen_count) - 0.15 * self.overrides))

    def sighted(self, source: ItemSource, explicit: bool) -> None:
        """Seen again in `source`'s message."""
        self.sources[source.message_id] = source
        self.added.append(source)
        self.seen_count = len(self.sources)
        self.last_seen = max(self.last_seen, source.said_at)
        self.first_seen = min(self.first_seen, source.said_at)
        if explicit and not self.explicit:
            self.explicit = True
        self.overrides, self.challenger = 0, None
        self.confidence = max(self.confidence, self.rated()) if self.origin == "user" else self.rated()
        self.changed = True

    def replace_by(self, other: "Draft", when: datetime) -> None:
        self.status, self.replaced_by, self.replaced_at, self.changed = "replaced", other.id, when, True


@dataclass(frozen=True)
class Merged:
    """A batch merged: the items to insert, those to update (both with the sources to add), and
    how many candidates each rule took."""

    inserted: list[Draft]
    updated: list[Draft]
    counts: dict[str, int]


def source_of(candidate: Candidate) -> ItemSource:
    m = candidate.source
    return ItemSource(m.id, m.conversation_id, m.created_at, m.external_id)


# The word sets below are cached: a batch compares each candidate with every item of its person.
@lru_cache(maxsize=16384)
def content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in (w.lower() for w in words(text)) if len(w) > 2 and w not in STOPWORDS
                     and not _NUMBER.fullmatch(w))


@lru_cache(maxsize=16384)
def _normal(text: str) -> str:
    return " ".join(words(text.lower()))


@lru_cache(maxsize=16384)
def _numbers(text: str) -> frozenset[str]:
    return frozenset(_NUMBER.findall(text))


def similar(a: str, b: str, threshold: float = SAME) -> bool:
    """Whether two values say the same thing: equal once normalized, or sharing most content
    words (Jaccard), the same numbers and the same names ("writes code in Python" and "writes code
    in Go" share most words, not the value)."""
    if _normal(a) == _normal(b):
        return True
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb or len(wa & wb) / len(wa | wb) < threshold:
        return False
    return _numbers(a) == _numbers(b) and _names(a) == _names(b)


@lru_cache(maxsize=16384)
def _names(text: str) -> frozenset[str]:
    """The capitalized words of a value past its first word ("Porto", "Python", "Ana")."""
    return frozenset(w.lower() for w in words(text)[1:] if w[:1].isupper() and w not in ("I", "I'm", "I've", "I'd"))


def says(sentence: str, value: str) -> bool:
    """Whether a sentence (of a summary, say) states `value`: it holds every number of the value
    and most of its content words (half of them when it has numbers: "I'm 34 years" states "I'm
    34 years old")."""
    if value.lower() in sentence.lower():
        return True
    numbers = set(_NUMBER.findall(value))
    want, have = content_words(value), content_words(sentence)
    if not want or not numbers <= set(_NUMBER.findall(sentence)):
        return False
    return len(want & have) / len(want) >= (0.5 if numbers else SAME)


def renumbered(old: str, new: str) -> bool:
    """The same statement with other numbers: "I've read 220 pages" after "I've read 120 pages"."""
    na, nb = _numbers(old), _numbers(new)
    if not na or not nb or na == nb:
        return False
    wa, wb = content_words(old), content_words(new)
    return bool(wa and wb) and len(wa & wb) / min(len(wa), len(wb)) >= SAME


def merge(items: Iterable[ProfileItem], candidates: Sequence[Candidate]) -> Merged:
    """The profile's `items` (every status) with `candidates` merged in (module docstring)."""
    drafts = [Draft.of(i) for i in items]
    counts = {"new": 0, "seen": 0, "replaced": 0, "overridden": 0, "known": 0, "suppressed": 0}
    for candidate in sorted(candidates, key=lambda c: c.source.seq):
        counts[_merge_one(drafts, candidate)] += 1
    inserted = [d for d in drafts if d.new]
    updated = [d for d in drafts if d.changed and not d.new]
    return Merged(inserted, updated, counts)


def _merge_one(drafts: list[Draft], c: Candidate) -> str:
    source = source_of(c)
    mine = [d for d in drafts if d.person == c.person]
    # learned from this message already, or deleted by the person: nothing to do
    if any(source.message_id in d.sources and (d.key == c.key or similar(d.value, c.value)) for d in mine):
        return "known"
    if any(d.status == "deleted" and similar(d.value, c.value) for d in mine):
        return "suppressed"
    active = [d for d in mine if d.active]
    same = next((d for d in active if d.subject == c.subject and similar(d.value, c.value)), None)
    if same is not None:
        same.sighted(source, c.explicit)
        return "seen"
    if c.attribute:
        slot = next((d for d in active if d.key == c.key), None)
        if slot is not None:
            if c.explicit:
                return _replace(drafts, slot, c)
            return _override(drafts, slot, c, source)
    if c.correction and c.explicit:
        corrected = _corrected(active, c)
        if corrected is not None:
            return _replace(drafts, corrected, c, confidence=0.95)
    if c.explicit:
        update = next((d for d in active if d.subject == c.subject and d.topic == c.topic
                       and renumbered(d.value, c.value)), None)
        if update is not None:
            return _replace(drafts, update, c)
    drafts.append(Draft.learned(c))
    return "new"


def _replace(drafts: list[Draft], old: Draft, c: Candidate, *, confidence: float | None = None) -> str:
    new = Draft.learned(c, confidence=confidence)
    old.replace_by(new, new.first_seen)
    drafts.append(new)
    return "replaced"


def _override(drafts: list[Draft], item: Draft, c: Candidate, source: ItemSource) -> str:
    """An inferred value against the item's: counted; the item is replaced once the same competing
    value has come OVERRIDES_TO_CHANGE times in a row."""
    challenger = item.challenger
    if challenger is None or not similar(str(challenger.get("value", "")), c.value):
        challenger = {"value": c.value, "count": 0, "sources": []}
    challenger["count"] = int(challenger["count"]) + 1
    challenger["sources"] = [*challenger["sources"], source.as_json()][-CHALLENGER_SOURCES:]
    item.challenger, item.overrides, item.changed = challenger, item.overrides + 1, True
    item.confidence = item.rated() if item.origin != "user" else item.confidence
    if challenger["count"] < OVERRIDES_TO_CHANGE:
        return "overridden"
    new = Draft.learned(c)
    for raw in challenger["sources"]:
        s = ItemSource(UUID(raw["message_id"]), UUID(raw["conversation_id"]),
                       datetime.fromisoformat(raw["said_at"]), raw.get("external_id"))
        if s.message_id not in new.sources:
            new.sources[s.message_id] = s
            new.added.append(s)
    new.seen_count = len(new.sources)
    new.first_seen = min(s.said_at for s in new.sources.values())
    new.confidence = new.rated()
    item.replace_by(new, source.said_at)
    item.challenger = None
    drafts.append(new)
    return "replaced"


def _corrected(active: Sequence[Draft], c: Candidate) -> Draft | None:
    """The item a correction corrects: of the same person, sharing most of its words or their
    slot (the board's rule, `said_slots`: "vegan" and "vegetarian" share the diet slot), said
    before it; None when none shares a slot or two words."""
    said = said_slots(c.value)
    plain = set(words(c.value.lower()))
    best, best_shared = None, 0
    for d in active:
        if d.last_seen > c.source.created_at:
            continue
        shared = said & said_slots(d.value)
        if len(shared) < 2 and not (shared - plain):  # one plain word in common is chance
            continue
        if len(shared) > best_shared or (len(shared) == best_shared and best is not None
                                         and d.last_seen > best.last_seen):
            best, best_shared = d, len(shared)
    return best
