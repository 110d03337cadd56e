"""Long-term, cross-session memory: one summary per finished conversation, and continuity notes.

Owns: writing a conversation's `conversation_summaries` row (summary, key facts, entities, topics,
open questions and action items, embedding) when it has been idle long enough or is closed, and
the continuity note a new conversation of the same user can start from. It reads the live chain
and the board that memctx.pipeline.catchup keeps; it never changes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping
from uuid import UUID

from psycopg.types.json import Jsonb

from memctx import metrics
from memctx.app import App
from memctx.pipeline.board import get_board
from memctx.pipeline.catchup import catch_up, chain_params, live_chain
from memctx.pipeline.learning import learn_all
from memctx.sql import QUERIES
from memctx.summarize.length import capped, summary_cap
from memctx.summarize.types import Summarizer


@dataclass(frozen=True)
class ConversationSummary:
    conversation_id: UUID
    user_id: UUID
    summary: str
    key_facts: list[str]
    entities: dict[str, list[str]]
    topics: list[str]
    action_items: list[str]
    pending_questions: list[str]
    first_seq: int
    last_seq: int
    token_count: int | None
    updated_at: datetime

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "ConversationSummary":
        return cls(**{k: row[k] for k in cls.__dataclass_fields__})

    def as_json(self) -> dict[str, Any]:
        return {"conversation_id": str(self.conversation_id), "summary": self.summary, "key_facts": self.key_facts,
                "entities": self.entities, "topics": self.topics, "pending_questions": self.pending_questions,
                "action_items": self.action_items, "last_seq": self.last_seq, "tokens": self.token_count}


@dataclass(frozen=True)
class ContinuityNote:
    """What a new conversation should know of the user's last one."""

    conversation_id: UUID
    title: str | None
    last_message_at: datetime | None
    summary: str
    pending_questions: list[str]
    action_items: list[str]

    def text(self) -> str:
        when = f" ({self.last_message_at:%d %B %Y})" if self.last_message_at else ""
        name = f" “{self.title}”" if self.title else ""
        parts = [f"Previous conversation{name}{when}: {self.summary}"]
        if self.pending_questions:
            parts.append("Open questions: " + "; ".join(self.pending_questions))
        if self.action_items:
            parts.append("Action items: " + "; ".join(self.action_items))
        return "\n".join(parts)

    def as_json(self) -> dict[str, Any]:
        return {"conversation_id": str(self.conversation_id), "title": self.title,
                "last_message_at": self.last_message_at.isoformat() if self.last_message_at else None,
                "summary": self.summary, "pending_questions": self.pending_questions,
                "action_items": self.action_items, "text": self.text()}


def close_conversation(app: App, user_id: UUID, conversation_id: UUID, summarizer: Summarizer | None = None, *,
                       catch_up_first: bool = True, explicit: bool = False) -> ConversationSummary:
    """Write (or rewrite) the conversation's long-term summary from its live chain and board; like
    every summary, at most half of what it summarizes (the live chain's tokens).

    With `catch_up_first`, the chain, the board (its incomplete tail included) and the profile are
    brought up to date first; without it, the profile still is (learning happens on close). `explicit` also marks the conversation closed (an idle one is only summarized:
    the user may come back to it, and the next idle period rewrites the summary).
    """
    summarizer = summarizer or app.summarizer
    if catch_up_first:
        catch_up(app, user_id, conversation_id, summarizer, force_board=True)
    else:
        learn_all(app, user_id, conversation_id)  # on close, whatever the caller caught up
    chain = live_chain(app, user_id, conversation_id)
    board = get_board(app, user_id, conversation_id)
    params = chain_params(app.settings)
    if chain:
        # A message that arrived after the catch-up has no token count yet.
        covered = sum(c.token_count or app.counter.count(c.text) for c in chain)
        cap = summary_cap(covered, app.settings.board_length)
        draft = capped(summarizer.summarize([c.source() for c in chain], level=params.master_level, is_master=True,
                                            max_tokens=cap), cap, app.counter)
        text, tokens = draft.content, draft.token_count
    else:
        text, tokens = "", 0
    vector = app.embedder.embed([text])[0] if text else None
    data = board.texts_json() if board else {}
    try:
        with app.pool.connection() as conn, conn.transaction():
            row = conn.execute(QUERIES["upsert_conversation_summary"], {
                "conversation_id": conversation_id, "user_id": user_id, "summary": text,
                "key_facts": Jsonb(data.get("key_facts", [])), "entities": Jsonb(data.get("entities", {})),
                "topics": Jsonb(data.get("topics", [])), "action_items": Jsonb(data.get("action_items", [])),
                "pending_questions": Jsonb(data.get("pending_questions", [])),
                "first_seq": chain[0].first_seq if chain else 0, "last_seq": chain[-1].last_seq if chain else 0,
                "token_count": tokens, "embedding": vector}).fetchone()
            if explicit:
                conn.execute(QUERIES["mark_conversation_closed"], {"conversation_id": conversation_id,
                                                                   "user_id": user_id})
    except Exception:
        metrics.FAILURES.labels(kind="longterm").inc()
        raise
    metrics.LONGTERM_WRITTEN.inc()
    return ConversationSummary.from_row(row)


def get_conversation_summary(app: App, user_id: UUID, conversation_id: UUID) -> ConversationSummary | None:
    with app.pool.connection() as conn:
        row = conn.execute(QUERIES["get_conversation_summary"],
                           {"user_id": user_id, "conversation_id": conversation_id}).fetchone()
    return ConversationSummary.from_row(row) if row else None


def continuity_note(app: App, user_id: UUID, *, current_conversation_id: UUID | None = None) -> ContinuityNote | None:
    """The user's last summarized conversation (other than the current one), or None."""
    with app.pool.connection() as conn:
        row = conn.execute(QUERIES["latest_conversation_summary"],
                           {"user_id": user_id, "exclude": current_conversation_id}).fetchone()
    if row is None:
        return None
    return ContinuityNote(row["conversation_id"], row["title"], row["last_message_at"], row["summary"],
                          list(row["pending_questions"]), list(row["action_items"]))
