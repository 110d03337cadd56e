"""Learning in the database: the profile and the tool procedures, brought up to date from a
conversation's new messages.

Owns: `learn_step`, which learns the next batch of a conversation's messages — read them, let the
learner find candidates (`memctx.learn`: the extractive rules, or the LLM's validated reply),
merge them into the profile as read (`memctx.learn.merge`) and embed the values of the new items,
then in one transaction under the user's profile lock store the merge (merged again first when
the profile moved meanwhile), store the tool procedures of the batch and move the conversation's
learned position (`profile_progress`) — and `learn_all`, which repeats it until
nothing is left: what `catch_up` runs after the board, and `close_conversation` on close.

Idempotent: a batch is learned once (its position moves in the same transaction), and learning
it again (a crash between the read and the commit, a regeneration) adds nothing, since a sighting
is one source message and an episode one error message. It knows nothing of contexts (the
assembler reads the profile) nor of what a person edits (`memctx.pipeline.profile`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence
from uuid import UUID
from weakref import WeakKeyDictionary

from psycopg.types.json import Jsonb

from memctx import metrics
from memctx.app import App
from memctx.learn.merge import Draft, merge
from memctx.learn.patterns import episodes
from memctx.learn.types import Learner, ProcedureCandidate, ProfileItem, Said
from memctx.providers import make_learner
from memctx.sql import QUERIES

BATCH = 200  # messages learned per transaction
LOOKBACK = 30  # earlier turns read for the tool episodes a batch may close


@dataclass(frozen=True)
class Learned:
    """What learning one conversation did: messages read, candidates found, and what became of
    them (`outcomes`: new, seen, replaced, overridden, known, suppressed), procedures touched."""

    messages: int = 0
    candidates: int = 0
    procedures: int = 0
    outcomes: Mapping[str, int] | None = None
    seconds: float = 0.0

    def plus(self, other: "Learned") -> "Learned":
        outcomes = dict(self.outcomes or {})
        for k, v in (other.outcomes or {}).items():
            outcomes[k] = outcomes.get(k, 0) + v
        return Learned(self.messages + other.messages, self.candidates + other.candidates,
                       self.procedures + other.procedures, outcomes, self.seconds + other.seconds)

    def as_json(self) -> dict[str, Any]:
        return {"messages": self.messages, "candidates": self.candidates, "procedures": self.procedures,
                "outcomes": dict(self.outcomes or {}), "seconds": round(self.seconds, 3)}


_LEARNERS: "WeakKeyDictionary[Any, Learner]" = WeakKeyDictionary()
_LEARNERS_LOCK = threading.Lock()


def learner_of(app: App) -> Learner:
    """The app's learner (`memctx.providers.make_learner`), one per summarizer."""
    with _LEARNERS_LOCK:
        learner = _LEARNERS.get(app.summarizer)
        if learner is None:
            learner = _LEARNERS[app.summarizer] = make_learner(app.settings, app.summarizer)
        return learner


def learn_all(app: App, user_id: UUID, conversation_id: UUID, learner: Learner | None = None) -> Learned:
    """Learn every message of the conversation not learned yet, batch by batch (nothing when the
    settings turn learning off: `learning_enabled`)."""
    total = Learned()
    if not app.settings.learning_enabled:
        return total
    while (step := learn_step(app, user_id, conversation_id, learner)) is not None:
        total = total.plus(step)
    return total


def learn_step(app: App, user_id: UUID, conversation_id: UUID, learner: Learner | None = None) -> Learned | None:
    """Learn the next batch of the conversation's messages; None when none is left."""
    started = time.perf_counter()
    learner = learner or learner_of(app)
    key = {"user_id": user_id, "conversation_id": conversation_id}
    with app.pool.connection() as conn:
        after = _progress(conn, key)
        rows = conn.execute(QUERIES["learn_pending_messages"],
                            {**key, "after_seq": after, "limit": BATCH, "lookback": LOOKBACK}).fetchall()
        items = _items(conn, key, None)
    said = [Said.from_row(r) for r in rows]
    fresh = [m for m in said if m.seq > after]
    if not fresh:
        return None
    try:
        candidates = learner.learn(fresh, [i for i in items if i.status == "active"])
    except Exception:
        metrics.FAILURES.labels(kind="learn").inc()
        raise
    procedures = [p for p in episodes(said) if p.error_message.seq > after
                  or (p.fix_message is not None and p.fix_message.seq > after)]
    # merged once outside the lock to embed only the values of the items it makes
    merged = merge(items, candidates)
    vectors = _embedded(app, merged.inserted, {})
    last = fresh[-1].seq
    with app.pool.connection() as conn, conn.transaction():
        conn.execute(QUERIES["lock_profile"], key)
        now_after = _progress(conn, key)
        if now_after >= last:  # another catch-up learned this batch meanwhile
            return Learned(seconds=time.perf_counter() - started)
        now_items = _items(conn, key, None)
        if now_after != after or now_items != items:  # the profile moved meanwhile: merged again
            candidates = [c for c in candidates if c.source.seq > now_after]
            merged = merge(now_items, candidates)
            vectors = _embedded(app, merged.inserted, vectors)
        for draft in merged.inserted:
            conn.execute(QUERIES["insert_profile_item"], _item_row(draft, user_id, vectors.get(draft.value)))
        for draft in merged.updated:
            conn.execute(QUERIES["update_profile_item"], _item_row(draft, user_id, None))
        for draft in (*merged.inserted, *merged.updated):
            for source in draft.added:
                conn.execute(QUERIES["insert_profile_source"], {
                    "item_id": draft.id, "user_id": user_id, "message_id": source.message_id,
                    "conversation_id": source.conversation_id, "said_at": source.said_at})
        for procedure in procedures:
            _store_procedure(conn, user_id, procedure)
        conn.execute(QUERIES["save_profile_progress"], {**key, "learned_seq": last})
    for outcome, n in merged.counts.items():
        if n:
            metrics.PROFILE_LEARNED.labels(outcome=outcome).inc(n)
    return Learned(len(fresh), len(candidates), len(procedures), merged.counts, time.perf_counter() - started)


def _items(conn: Any, key: Mapping[str, UUID], status: str | None) -> list[ProfileItem]:
    """The user's items of `status` (None: every status, tombstones too), with their sources."""
    rows = conn.execute(QUERIES["list_profile"], {**key, "status": status, "person": None, "id": None,
                                                  "limit": None}).fetchall()
    return [ProfileItem.from_row(r) for r in rows]


def _embedded(app: App, drafts: Sequence[Draft], vectors: Mapping[str, Any]) -> dict[str, Any]:
    """`vectors` with the values of `drafts` not embedded yet added."""
    values = sorted({d.value for d in drafts} - vectors.keys())
    return {**vectors, **dict(zip(values, app.embedder.embed(values)))} if values else dict(vectors)


def _progress(conn: Any, key: Mapping[str, UUID]) -> int:
    row = conn.execute(QUERIES["profile_progress"], key).fetchone()
    return int(row["learned_seq"]) if row else 0


def _item_row(draft: Draft, user_id: UUID, vector: Any) -> dict[str, Any]:
    return {"id": draft.id, "user_id": user_id, "person": draft.person, "kind": draft.kind, "subject": draft.subject,
            "topic": draft.topic, "key": draft.key, "value": draft.value, "explicit": draft.explicit,
            "status": draft.status, "origin": draft.origin, "confidence": draft.confidence,
            "seen_count": draft.seen_count, "overrides": draft.overrides,
            "challenger": Jsonb(draft.challenger) if draft.challenger else None, "first_seen": draft.first_seen,
            "last_seen": draft.last_seen, "replaced_by": draft.replaced_by, "replaced_at": draft.replaced_at,
            "embedding": vector}


def _store_procedure(conn: Any, user_id: UUID, procedure: ProcedureCandidate) -> None:
    """A tool error episode: the procedure's row, its error (and fix) message as sources, its counts."""
    error = procedure.error_message
    fix = procedure.fix_message
    row = conn.execute(QUERIES["upsert_procedure"], {
        "user_id": user_id, "tool": procedure.tool, "error": procedure.error, "fix": procedure.fix,
        "said_at": fix.created_at if fix is not None else error.created_at}).fetchone()
    steps: Sequence[tuple[Said, str]] = [(error, "error")] + ([(fix, "fix")] if fix is not None else [])
    for message, step in steps:
        conn.execute(QUERIES["insert_procedure_source"], {
            "procedure_id": row["id"], "user_id": user_id, "message_id": message.id,
            "conversation_id": message.conversation_id, "step": step, "said_at": message.created_at})
    conn.execute(QUERIES["count_procedure"], {"id": row["id"], "user_id": user_id})
