"""The summary board in the database: read it, and fold the next messages into it.

One board per conversation: its running summary, and the sections of `SECTIONS` (key facts,
entities, topics, action items, pending questions, constraints) in one jsonb `items` column, every
item with the messages it came from. `board_step` folds the next `update_frequency` new messages
in, in one transaction under the conversation's lock; the summarizer decides the content
(`memctx.summarize.board`).
`edit_board_item` lets a person rewrite an item (its sources kept, marked edited).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Mapping
from uuid import UUID

from psycopg import Connection
from psycopg.types.json import Jsonb

from memctx import metrics
from memctx.app import App
from memctx.sql import QUERIES
from memctx.summarize.types import SECTION, Board, SourceText, Summarizer


def get_board(app: App, user_id: UUID, conversation_id: UUID) -> Board | None:
    """The conversation's board, every item with the messages it came from (`Board.view_json`
    is what the CLI, API and page show); None before its first update."""
    with app.pool.connection() as conn:
        row = conn.execute(QUERIES["get_board"], {"user_id": user_id, "conversation_id": conversation_id}).fetchone()
    return board_from_row(row) if row else None


def board_from_row(row: Mapping[str, Any]) -> Board:
    return Board.from_json({"summary": row["current_summary"], "items": row["items"],
                            "message_count": row["message_count"], "last_seq": row["last_seq"],
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
                              first_seq=r["seq"], last_seq=r["seq"], created_at=r["created_at"],
                              external_id=r["external_id"]) for r in rows]
        try:
            new = summarizer.update_board(board, sources, max_tokens=settings.board_length)
        except Exception:
            metrics.FAILURES.labels(kind="board").inc()
            raise
        # A board that consumed nothing (all-empty messages) still advances past them.
        last_seq = max(new.last_seq, rows[-1]["seq"])
        _write(conn, key, new, message_count=max(new.message_count, board.message_count + len(rows)),
               last_seq=last_seq, frequency=frequency)
    metrics.BOARD_UPDATES.inc()
    metrics.BOARD_DURATION.observe(time.perf_counter() - started)
    return True


def _write(conn: Connection[Any], key: Mapping[str, UUID], board: Board, *, message_count: int, last_seq: int,
           frequency: int) -> None:
    data = board.to_json()
    conn.execute(QUERIES["upsert_board"], {
        **key, "summary": board.summary, "items": Jsonb(data["items"]), "message_count": message_count,
        "last_seq": last_seq, "update_frequency": frequency, "counts": Jsonb(data["counts"])})


def edit_board_item(app: App, user_id: UUID, conversation_id: UUID, section: str, index: int, text: str) -> Board:
    """Replace the text of item `index` (0-based, as listed) of a board section. The item keeps its
    sources and is marked edited. Raises LookupError (no board, no such section or item) or
    ValueError (empty text)."""
    if not text.strip():
        raise ValueError("the new text is empty")
    if section not in SECTION:
        raise LookupError(f"no board section {section!r}; the sections are {', '.join(SECTION)}")
    key = {"user_id": user_id, "conversation_id": conversation_id}
    with app.pool.connection() as conn, conn.transaction():
        conn.execute(QUERIES["lock_conversation_summaries"], {"conversation_id": conversation_id})
        row = conn.execute(QUERIES["get_board"], key).fetchone()
        if row is None:
            raise LookupError("this conversation has no summary board yet")
        board = board_from_row(row)
        items = list(board.section(section))
        if not 0 <= index < len(items):
            raise LookupError(f"{section} has {len(items)} items; there is no item {index}")
        items[index] = replace(items[index], text=text.strip(), edited=True)
        edited = replace(board, items={**board.items, section: tuple(items)})
        _write(conn, key, edited, message_count=board.message_count, last_seq=board.last_seq,
               frequency=row["update_frequency"])
    return edited
