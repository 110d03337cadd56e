"""The summary board in the database: read it, and fold the next messages into it.

One board per conversation (summary, key facts, entities, topics, action items, pending questions,
constraints). `board_step` folds the next `update_frequency` new messages in, in one transaction
under the conversation's lock; the summarizer decides the content (`memctx.summarize.board`).
"""

from __future__ import annotations

import time
from typing import Any, Mapping
from uuid import UUID

from psycopg.types.json import Jsonb

from memctx import metrics
from memctx.app import App
from memctx.sql import QUERIES
from memctx.summarize.types import Board, SourceText, Summarizer


def get_board(app: App, user_id: UUID, conversation_id: UUID) -> Board | None:
    with app.pool.connection() as conn:
        row = conn.execute(QUERIES["get_board"], {"user_id": user_id, "conversation_id": conversation_id}).fetchone()
    return board_from_row(row) if row else None


def board_from_row(row: Mapping[str, Any]) -> Board:
    return Board.from_json({
        "summary": row["current_summary"], "key_facts": row["key_facts"], "entities": row["entities"],
        "topics": row["topics"], "action_items": row["action_items"], "pending_questions": row["pending_questions"],
        "constraints": row["constraints"], "message_count": row["message_count"], "last_seq": row["last_seq"],
        "counts": row.get("counts") or {}})


def board_step(app: App, user_id: UUID, conversation_id: UUID, summarizer: Summarizer, *, force: bool = False) -> bool:
    """Fold the next `update_frequency` new messages into the board (fewer when forced)."""
    settings = app.settings
    started = time.perf_counter()
    with app.pool.connection() as conn, conn.transaction():
        conn.execute(QUERIES["lock_conversation_summaries"], {"conversation_id": conversation_id})
        key = {"user_id": user_id, "conversation_id": conversation_id}
        row = conn.execute(QUERIES["get_board"], key).fetchone()
        board = board_from_row(row) if row else Board.empty()
        frequency = row["update_frequency"] if row else settings.board_update_frequency
        rows = conn.execute(QUERIES["board_pending_messages"],
                            {**key, "after_seq": board.last_seq, "limit": frequency}).fetchall()
        if not rows or (len(rows) < frequency and not force):
            return False
        sources = [SourceText(id=r["id"], kind="message", role=r["role"], speaker=r["speaker"], text=r["text"],
                              first_seq=r["seq"], last_seq=r["seq"], created_at=r["created_at"]) for r in rows]
        try:
            new = summarizer.update_board(board, sources, max_tokens=settings.board_length)
        except Exception:
            metrics.FAILURES.labels(kind="board").inc()
            raise
        # A board that consumed nothing (all-empty messages) still advances past them.
        last_seq = max(new.last_seq, rows[-1]["seq"])
        data = new.to_json()
        conn.execute(QUERIES["upsert_board"], {
            **key, "summary": new.summary, "key_facts": Jsonb(data["key_facts"]), "entities": Jsonb(data["entities"]),
            "topics": Jsonb(data["topics"]), "action_items": Jsonb(data["action_items"]),
            "pending_questions": Jsonb(data["pending_questions"]), "constraints": Jsonb(data["constraints"]),
            "message_count": max(new.message_count, board.message_count + len(rows)), "last_seq": last_seq,
            "update_frequency": frequency, "counts": Jsonb(data["counts"])})
    metrics.BOARD_UPDATES.inc()
    metrics.BOARD_DURATION.observe(time.perf_counter() - started)
    return True
