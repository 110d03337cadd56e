"""The profile as its person sees it: list it, correct it, delete from it, add to it, and rate what
a context brought.

Owns: the operations the doors offer a user on what memctx learned about them (`memctx profile`,
`/v1/me/profile`, the MCP tools, the page), each one transaction under the user's profile lock,
so that learning never interleaves with an edit:

- an edit keeps the person's words (the item is marked edited; learning from its own sources
  again changes nothing: `memctx.learn.merge`);
- a deletion leaves a tombstone: the item is out of every context and is never learned again;
- a rating (`useful`, `wrong`, `outdated`) of a profile item, a memory (message or summary) or a
  procedure is stored with who gave it, through which door and when (`memctx.feedback_log`):
  `wrong` deletes a profile item as above, `outdated` marks it replaced (history), `useful`
  counts towards its weight in later rankings (bounded: memctx.learn.recall). A memory's ratings
  are read by the contexts themselves.

Nothing is learned here (`memctx.pipeline.learning` learns).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping
from uuid import UUID

from memctx.app import App
from memctx.learn.topics import slot_of, subject_of, topic_of
from memctx.learn.types import KINDS, RATINGS, TARGET_KINDS, USER, Procedure, ProfileItem, item_key
from memctx.models import InvalidInput, check_text
from memctx.sql import QUERIES

MAX_VALUE = 2000
DOORS = ("api", "mcp", "page", "cli", "library")


@dataclass(frozen=True)
class StoredRating:
    """A rating as stored: what was rated, how, by whom, through which door, when."""

    id: int
    target_kind: str
    target_id: UUID
    rating: str
    via: str
    rated_by: str
    created_at: datetime
    conversation_id: UUID | None = None
    note: str | None = None
    target_text: str | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "StoredRating":
        return cls(**{k: row[k] for k in cls.__dataclass_fields__ if k in row})

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "target_kind": self.target_kind, "target_id": str(self.target_id),
                "rating": self.rating, "via": self.via, "rated_by": self.rated_by,
                "created_at": self.created_at.isoformat(),
                "conversation_id": str(self.conversation_id) if self.conversation_id else None,
                "note": self.note, "target_text": self.target_text}


def list_profile(app: App, user_id: UUID, *, status: str | None = "active", person: str | None = None,
                 limit: int = 500) -> list[ProfileItem]:
    """The user's profile items (`status` None: history and deletions too), each with its sources."""
    if status is not None and status not in ("active", "replaced", "deleted"):
        raise InvalidInput(f"unknown status {status!r} (known: active, replaced, deleted)")
    if person is not None:
        check_text(person, "person")
    with app.pool.connection() as conn:
        rows = conn.execute(QUERIES["list_profile"], {"user_id": user_id, "status": status, "person": person,
                                                      "id": None, "limit": limit}).fetchall()
    return [ProfileItem.from_row(r) for r in rows]


def get_item(app: App, user_id: UUID, item_id: UUID) -> ProfileItem:
    """One item of the user's profile; LookupError when it is not theirs or does not exist."""
    with app.pool.connection() as conn:
        row = conn.execute(QUERIES["list_profile"], {"user_id": user_id, "status": None, "person": None,
                                                     "id": item_id, "limit": 1}).fetchone()
    if row is None:
        raise LookupError(f"no profile item {item_id}")
    return ProfileItem.from_row(row)


def edit_item(app: App, user_id: UUID, item_id: UUID, value: str) -> ProfileItem:
    """The item in the person's words: kept so against learning from its sources again."""
    value = _value(value)
    vector = app.embedder.embed([value])[0]
    with app.pool.connection() as conn, conn.transaction():
        conn.execute(QUERIES["lock_profile"], {"user_id": user_id})
        row = conn.execute(QUERIES["edit_profile_item"], {"id": item_id, "user_id": user_id, "value": value,
                                                          "embedding": vector}).fetchone()
    if row is None:
        raise LookupError(f"no profile item {item_id} to edit (deleted, or not yours)")
    return get_item(app, user_id, item_id)


def delete_item(app: App, user_id: UUID, item_id: UUID) -> ProfileItem:
    """A tombstone: out of every context, never learned again (its sources kept, so forgetting
    them forgets it)."""
    with app.pool.connection() as conn, conn.transaction():
        conn.execute(QUERIES["lock_profile"], {"user_id": user_id})
        row = conn.execute(QUERIES["delete_profile_item"], {"id": item_id, "user_id": user_id}).fetchone()
    if row is None:
        raise LookupError(f"no profile item {item_id} to delete (deleted already, or not yours)")
    return get_item(app, user_id, item_id)


def add_item(app: App, user_id: UUID, value: str, *, kind: str = "fact", person: str = USER) -> ProfileItem:
    """An item the person adds by hand ("always answer in Spanish" as an instruction): no source
    message, never forgotten with a conversation."""
    value = _value(value)
    if kind not in KINDS:
        raise InvalidInput(f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
    check_text(person, "person")
    if not person.strip() or len(person) > 200:
        raise InvalidInput("person must be 1 to 200 characters")
    slot = slot_of(value)
    topic = "style" if kind == "instruction" else slot[1] if slot else topic_of(value)
    subject = subject_of(value)
    vector = app.embedder.embed([value])[0]
    with app.pool.connection() as conn, conn.transaction():
        conn.execute(QUERIES["lock_profile"], {"user_id": user_id})
        row = conn.execute(QUERIES["add_profile_item"], {
            "user_id": user_id, "person": person.strip(), "kind": kind, "subject": subject, "topic": topic,
            "key": item_key(person.strip(), subject, topic, slot[0] if slot else ""), "value": value,
            "embedding": vector}).fetchone()
    return get_item(app, user_id, row["id"])


def rate(app: App, user_id: UUID, target_kind: str, target_id: UUID, rating: str, *, via: str, rated_by: str,
         note: str | None = None) -> StoredRating:
    """Store a rating of what a context brought and apply it (module docstring). LookupError when
    the rated thing is not the user's; InvalidInput for an unknown kind, rating or door."""
    if target_kind not in TARGET_KINDS:
        raise InvalidInput(f"unknown kind {target_kind!r} (known: {', '.join(TARGET_KINDS)})")
    if rating not in RATINGS:
        raise InvalidInput(f"unknown rating {rating!r} (known: {', '.join(RATINGS)})")
    if via not in DOORS:
        raise InvalidInput(f"unknown door {via!r}")
    if note is not None:
        check_text(note, "note")
        if len(note) > 2000:
            raise InvalidInput("a note is at most 2000 characters")
    key = {"user_id": user_id, "kind": target_kind, "id": target_id}
    with app.pool.connection() as conn, conn.transaction():
        conn.execute(QUERIES["lock_profile"], key)
        target = conn.execute(QUERIES["rating_target"], key).fetchone()
        if target is None:
            raise LookupError(f"no {target_kind.replace('_', ' ')} {target_id}")
        row = conn.execute(QUERIES["insert_feedback"], {
            **key, "rating": rating, "via": via, "rated_by": rated_by[:200] or "unknown",
            "conversation_id": target["conversation_id"], "note": note}).fetchone()
        if target_kind == "profile_item":
            if rating == "wrong":
                conn.execute(QUERIES["delete_profile_item"], key)
            elif rating == "outdated":
                conn.execute(QUERIES["outdate_profile_item"], key)
            else:
                conn.execute(QUERIES["count_useful"], key)
        elif target_kind == "procedure" and rating == "useful":
            conn.execute(QUERIES["count_useful_procedure"], key)
    return StoredRating(row["id"], target_kind, target_id, rating, via, rated_by, row["created_at"],
                        target["conversation_id"], note)


def ratings(app: App, user_id: UUID, *, limit: int = 100) -> list[StoredRating]:
    """The user's ratings, newest first, with what each rated (`memctx.feedback_log`)."""
    with app.pool.connection() as conn:
        rows = conn.execute(QUERIES["list_feedback"], {"user_id": user_id, "limit": limit}).fetchall()
    return [StoredRating.from_row(r) for r in rows]


def procedures(app: App, user_id: UUID, *, limit: int = 100) -> list[Procedure]:
    """What worked after the user's agents' tool errors, most recent first."""
    with app.pool.connection() as conn:
        rows = conn.execute(QUERIES["list_procedures"], {"user_id": user_id, "tools": None, "limit": limit}).fetchall()
    return [Procedure.from_row(r) for r in rows]


def _value(value: str) -> str:
    check_text(value, "value")
    value = value.strip()
    if not value:
        raise InvalidInput("the value is empty")
    if len(value) > MAX_VALUE:
        raise InvalidInput(f"a value is at most {MAX_VALUE} characters")
    return value
