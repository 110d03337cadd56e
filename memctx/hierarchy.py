"""The summary hierarchy and board in the database: apply the pure chain rules, step by step.

Owns: reading a conversation's live chain (one query), applying `memctx.summarize.chain.plan_next`
actions to it — each action one transaction under a per-conversation advisory lock, so a crash
leaves the old chain or the new one, never half of either — updating the summary board every
`update_frequency` messages, embedding what arrived without an embedding, editing a summary by
hand and forcing a regeneration. `catch_up` brings one conversation fully up to date and is the
one entry point the worker, the CLI and the evaluation call.

It must not decide the rules (chain.py does) or write summary text (the summarizers do), and it
knows nothing of queues (memctx.dispatch does).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterator, Literal, Mapping
from uuid import UUID

from psycopg.types.json import Jsonb

from memctx import metrics
from memctx.app import App
from memctx.config import Settings
from memctx.models import Summary
from memctx.sql import QUERIES
from memctx.store import UnknownConversation
from memctx.summarize.chain import Action, ChainElement, ChainParams, plan_next
from memctx.summarize.types import Board, SourceText, Summarizer
from memctx.tokens import TokenCounter


def chain_params(settings: Settings) -> ChainParams:
    return ChainParams(n_sum=settings.n_sum, sum_window=settings.sum_window, n_sum_sum=settings.n_sum_sum,
                       max_sum_lvl=settings.max_sum_lvl, summary_length=settings.summary_length)


def make_summarizer(settings: Settings, counter: TokenCounter) -> Summarizer:
    """The configured summarizer: extractive (default) or the LLM one, which falls back to it."""
    from memctx.summarize.extractive import ExtractiveSummarizer

    extractive = ExtractiveSummarizer(counter)
    if settings.summarizer == "extractive":
        return extractive
    from memctx.summarize.llm import LLMSummarizer  # the openai client is only imported when used

    def on_failure(kind: str, *_: Any) -> None:
        metrics.FAILURES.labels(kind=f"llm_{kind}").inc()

    return LLMSummarizer(base_url=settings.llm_base_url or "https://api.openai.com/v1", model=settings.llm_model,
                         api_key=settings.llm_api_key.get_secret_value() if settings.llm_api_key else None,
                         timeout=settings.llm_timeout_s, max_retries=settings.llm_max_retries,
                         fallback=extractive, counter=counter, on_failure=on_failure)


@dataclass(frozen=True)
class ChainItem:
    """One element of a live chain as stored: a raw message or a (master) summary."""

    id: UUID
    kind: Literal["message", "summary"]
    level: int
    is_master: bool
    first_seq: int
    last_seq: int
    text: str
    token_count: int | None
    edited: bool
    role: str | None
    speaker: str | None
    created_at: datetime | None
    source_ids: tuple[UUID, ...] = ()

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "ChainItem":
        values = {k: row[k] for k in cls.__dataclass_fields__ if k != "source_ids"}
        return cls(**values, source_ids=tuple(row["source_ids"] or ()))

    def element(self) -> ChainElement:
        return ChainElement(self.id, self.level, self.first_seq, self.last_seq, self.is_master)

    def source(self) -> SourceText:
        return SourceText(id=self.id, kind=self.kind, role=self.role, speaker=self.speaker, text=self.text,
                          first_seq=self.first_seq, last_seq=self.last_seq, created_at=self.created_at,
                          level=self.level)


@dataclass(frozen=True)
class Step:
    """One applied action: the summary written (or the master updated) and what it covers."""

    rule: str
    level: int
    summary_id: UUID
    first_seq: int
    last_seq: int
    token_count: int
    is_master: bool


@dataclass(frozen=True)
class CatchUpResult:
    """What `catch_up` did to one conversation."""

    conversation_id: UUID
    last_seq: int  # the conversation's newest message when the catch-up started
    embedded_messages: int = 0
    steps: tuple[Step, ...] = ()
    board_updates: int = 0
    embedded_summaries: int = 0
    seconds: float = 0.0

    @property
    def summaries_written(self) -> int:
        return len(self.steps)

    def as_json(self) -> dict[str, Any]:
        return {"conversation_id": str(self.conversation_id), "last_seq": self.last_seq,
                "embedded_messages": self.embedded_messages, "summaries_written": self.summaries_written,
                "board_updates": self.board_updates, "embedded_summaries": self.embedded_summaries,
                "seconds": round(self.seconds, 3)}


@dataclass
class _Context:
    app: App
    user_id: UUID
    conversation_id: UUID
    summarizer: Summarizer
    params: ChainParams
    steps: list[Step] = field(default_factory=list)


# Reading -------------------------------------------------------------------------------------

def read_chain(conn, user_id: UUID, conversation_id: UUID, *, raw_limit: int | None = None) -> list[ChainItem]:
    """The live chain in chain order, in one query (at most `raw_limit` raw messages)."""
    rows = conn.execute(QUERIES["live_chain"], {"user_id": user_id, "conversation_id": conversation_id,
                                                "raw_limit": raw_limit}).fetchall()
    return [ChainItem.from_row(r) for r in rows]


def _owner(conn, user_id: UUID, conversation_id: UUID) -> Mapping[str, Any]:
    row = conn.execute(QUERIES["conversation_owner"],
                       {"user_id": user_id, "conversation_id": conversation_id}).fetchone()
    if row is None:
        raise UnknownConversation(conversation_id)
    return row


def live_chain(app: App, user_id: UUID, conversation_id: UUID) -> list[ChainItem]:
    """The conversation's live chain: master, summaries high to low, then raw recent messages."""
    with app.pool.connection() as conn:
        _owner(conn, user_id, conversation_id)
        return read_chain(conn, user_id, conversation_id)


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


# Embedding what arrived without one -------------------------------------------------------------

# Rows read per embedding round: large enough that the embedder sorts and batches well (its own
# batch size is `embed_batch_size`), small enough that a round stays a few seconds.
EMBED_ROUND = 256

def embed_messages(app: App, conversation_id: UUID, *, batch: int | None = None) -> int:
    """Embed (and token-count) the conversation's messages stored without; returns how many.

    A message without searchable text is neither embedded nor returned here (the database gives
    it 0 tokens and no embedding, so it is never a dense search hit).
    """
    batch = batch or EMBED_ROUND
    done = 0
    while True:
        with app.pool.connection() as conn:  # no transaction stays open while the model runs
            rows = conn.execute(QUERIES["unembedded_messages"],
                                {"conversation_id": conversation_id, "limit": batch}).fetchall()
        if not rows:
            return done
        counts = app.counter.count_many([r["text"] for r in rows])
        # Rows inserted by plain SQL were not token-counted at insert: one over the limit (which
        # ingest refuses) is kept with its true count and embedded by its first `limit` tokens.
        limit = app.settings.max_message_tokens
        vectors = app.embedder.embed([app.counter.truncate(r["text"], limit) if c > limit else r["text"]
                                      for r, c in zip(rows, counts)])
        with app.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(QUERIES["set_message_embedding"], [
                {"id": r["id"], "embedding": v, "token_count": c} for r, v, c in zip(rows, vectors, counts)])
        done += len(rows)
        metrics.MESSAGES_EMBEDDED.inc(len(rows))


def embed_summaries(app: App, conversation_id: UUID, *, batch: int | None = None, live_only: bool | None = None) -> int:
    """Embed the conversation's summaries written without an embedding, in batches.

    With `live_only` (default unless `summary_embeddings == "all"`), only the live ones: those
    superseded before they were embedded are left to `backfill_summary_embeddings`, off the
    catch-up's path (memory search reads live summaries only).
    """
    batch = batch or EMBED_ROUND
    live_only = app.settings.summary_embeddings != "all" if live_only is None else live_only
    done = 0
    while True:
        with app.pool.connection() as conn:
            rows = conn.execute(QUERIES["unembedded_summaries"],
                                {"conversation_id": conversation_id, "limit": batch,
                                 "live_only": live_only}).fetchall()
        if not rows:
            return done
        vectors = app.embedder.embed([r["content"] for r in rows])
        with app.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(QUERIES["set_summary_embedding"],
                            [{"id": r["id"], "embedding": v} for r, v in zip(rows, vectors)])
        done += len(rows)


def backfill_summary_embeddings(app: App, *, limit: int | None = None, conversation_id: UUID | None = None) -> int:
    """Embed one batch of the oldest superseded summaries stored without an embedding.

    Low-priority work for the worker's sweep and idle time (all conversations) and for
    `memctx summarize` (one conversation). Each row is claimed with a session advisory try-lock
    on an autocommit connection, so concurrent backfills never embed the same row and no
    transaction is open while the embedder runs. Returns how many were embedded (0 when nothing
    is left, or every candidate is being embedded by another backfill right now).
    """
    key = {"conversation_id": conversation_id, "limit": limit or app.settings.backfill_batch_size}
    with app.pool.connection() as claim:
        claim.autocommit = True
        ids = [r["id"] for r in claim.execute(QUERIES["lock_unembedded_summaries"], key).fetchall()]
        if not ids:
            claim.autocommit = False
            return 0
        try:
            rows = claim.execute(QUERIES["locked_unembedded_summaries"], {"ids": ids}).fetchall()
            texts = [r["content"] for r in rows]
            vectors = app.embedder.embed(texts) if rows else []
            counts = app.counter.count_many(texts) if rows else []
            if rows:
                with claim.transaction(), claim.cursor() as cur:
                    cur.executemany(QUERIES["set_backfilled_summary_embedding"], [
                        {"id": r["id"], "embedding": v, "token_count": c} for r, v, c in zip(rows, vectors, counts)])
            claim.execute(QUERIES["unlock_summaries"], {"ids": ids})
            claim.autocommit = False
        except BaseException:
            claim.close()  # a connection that may still hold row locks never goes back to the pool
            raise
    metrics.SUMMARIES_BACKFILLED.inc(len(rows))
    return len(rows)


def backfill_conversation(app: App, conversation_id: UUID, *, poll_s: float = 0.05) -> int:
    """Backfill until every summary of the conversation has an embedding; returns how many it did.

    Rows another backfill holds are waited for, so the conversation is fully embedded on return.
    """
    done = 0
    while True:
        n = backfill_summary_embeddings(app, conversation_id=conversation_id)
        done += n
        if n == 0:
            with app.pool.connection() as conn:
                left = conn.execute(QUERIES["unembedded_summary_count"],
                                    {"conversation_id": conversation_id}).fetchone()["n"]
            if left == 0:
                return done
            embed_summaries(app, conversation_id, live_only=True)  # live rows left by a failed catch-up
            time.sleep(poll_s)


# The hierarchy ---------------------------------------------------------------------------------

def _metric_kind(action: Action) -> str:
    if action.is_master:
        return "master_merge" if action.updates_master else "master_new"
    return f"level{action.level}"


def summarize_step(ctx: _Context) -> Step | None:
    """Apply the next action of the rules, in one transaction; None at the fixed point."""
    started = time.perf_counter()
    with ctx.app.pool.connection() as conn, conn.transaction():
        conn.execute(QUERIES["lock_conversation_summaries"], {"conversation_id": ctx.conversation_id})
        chain = read_chain(conn, ctx.user_id, ctx.conversation_id, raw_limit=ctx.params.n_sum)
        action = plan_next([c.element() for c in chain], ctx.params)
        if action is None:
            return None
        by_id = {(c.id, c.level, c.is_master): c for c in chain}
        items = [by_id[(e.id, e.level, e.is_master)] for e in action.sources]
        try:
            step = _write_merge(conn, ctx, action, items) if action.updates_master else _write_new(conn, ctx, action, items)
        except Exception:
            metrics.FAILURES.labels(kind="summarize").inc()
            raise
    metrics.SUMMARIES_GENERATED.labels(kind=_metric_kind(action), summarizer=ctx.summarizer.name).inc()
    metrics.SUMMARY_DURATION.labels(summarizer=ctx.summarizer.name).observe(time.perf_counter() - started)
    metrics.SUMMARY_TOKENS.observe(step.token_count)
    return step


def _write_new(conn, ctx: _Context, action: Action, items: list[ChainItem]) -> Step:
    draft = ctx.summarizer.summarize([i.source() for i in items], level=action.level, is_master=action.is_master,
                                     max_tokens=ctx.params.summary_length)
    row = conn.execute(QUERIES["insert_summary"], {
        "conversation_id": ctx.conversation_id, "user_id": ctx.user_id, "level": action.level,
        "is_master": action.is_master, "content": draft.content, "source_kind": action.source_kind,
        "source_ids": [i.id for i in items], "first_seq": action.first_seq, "last_seq": action.last_seq,
        "token_count": draft.token_count, "summarizer": draft.summarizer}).fetchone()
    summary_sources = [i.id for i in items if i.kind == "summary"]
    if summary_sources:
        _supersede(conn, ctx, summary_sources, row["id"])
    return Step(action.rule, action.level, row["id"], action.first_seq, action.last_seq, draft.token_count,
                action.is_master)


def _write_merge(conn, ctx: _Context, action: Action, items: list[ChainItem]) -> Step:
    master, merged = items[0], items[1:]
    draft = ctx.summarizer.summarize([i.source() for i in merged], level=action.level, is_master=True,
                                     max_tokens=ctx.params.summary_length, previous=master.text)
    row = conn.execute(QUERIES["merge_into_master"], {
        "id": master.id, "conversation_id": ctx.conversation_id, "content": draft.content,
        "added": [i.id for i in merged], "last_seq": action.last_seq, "token_count": draft.token_count,
        "summarizer": draft.summarizer}).fetchone()
    if row is None:
        raise RuntimeError(f"master summary {master.id} left the chain during a locked step")
    _supersede(conn, ctx, [i.id for i in merged], master.id)
    return Step(action.rule, action.level, master.id, action.first_seq, action.last_seq, draft.token_count, True)


def _supersede(conn, ctx: _Context, ids: list[UUID], by: UUID) -> None:
    done = conn.execute(QUERIES["supersede_summaries"], {"ids": ids, "superseded_by": by,
                                                         "conversation_id": ctx.conversation_id}).fetchall()
    if len(done) != len(ids):  # only possible if the lock were bypassed: refuse to fork the chain
        raise RuntimeError(f"expected to supersede {len(ids)} summaries, superseded {len(done)}")


# The board -------------------------------------------------------------------------------------

def board_step(ctx: _Context, *, force: bool = False) -> bool:
    """Fold the next `update_frequency` new messages into the board (fewer when forced)."""
    settings = ctx.app.settings
    started = time.perf_counter()
    with ctx.app.pool.connection() as conn, conn.transaction():
        conn.execute(QUERIES["lock_conversation_summaries"], {"conversation_id": ctx.conversation_id})
        key = {"user_id": ctx.user_id, "conversation_id": ctx.conversation_id}
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
            new = ctx.summarizer.update_board(board, sources, max_tokens=settings.board_length)
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


# Entry points ----------------------------------------------------------------------------------

def catch_up(app: App, user_id: UUID, conversation_id: UUID, summarizer: Summarizer | None = None, *,
             force_board: bool = False) -> CatchUpResult:
    """Bring one conversation's chain and board fully up to date, synchronously.

    Embeds messages stored without an embedding, applies the hierarchy rules until none applies
    (each action one transaction), folds every complete group of `update_frequency` new messages
    into the board (with `force_board`, the incomplete tail too), and embeds the summaries still
    live at the end (every summary written with `summary_embeddings="all"`; otherwise the
    superseded ones are left to `backfill_summary_embeddings`).
    Safe to run concurrently with itself and with the worker: every step takes the
    conversation's lock and re-reads the chain. Raises UnknownConversation for another user's id.
    """
    started = time.perf_counter()
    with app.pool.connection() as conn:
        _owner(conn, user_id, conversation_id)
    with _catch_up_lock(app, conversation_id):
        with app.pool.connection() as conn:
            owner = _owner(conn, user_id, conversation_id)
        ctx = _Context(app, user_id, conversation_id, summarizer or make_summarizer(app.settings, app.counter),
                       chain_params(app.settings))
        return _catch_up(ctx, owner["last_seq"], force_board, started)


@contextmanager
def _catch_up_lock(app: App, conversation_id: UUID, poll_s: float = 0.05) -> Iterator[None]:
    """Hold the conversation's catch-up lock, waiting for a running catch-up to finish.

    Polls a try-lock rather than blocking, so a long catch-up never trips statement_timeout.
    """
    key = {"conversation_id": conversation_id}
    with app.pool.connection() as guard:
        guard.autocommit = True
        while not guard.execute(QUERIES["try_lock_catch_up"], key).fetchone()["locked"]:
            time.sleep(poll_s)
        try:
            yield
        finally:
            try:
                guard.execute(QUERIES["unlock_catch_up"], key)
                guard.autocommit = False
            except Exception:
                guard.close()  # a connection that may still hold the lock never goes back to the pool


def _catch_up(ctx: _Context, last_seq: int, force_board: bool, started: float) -> CatchUpResult:
    app, conversation_id = ctx.app, ctx.conversation_id
    try:
        embedded = embed_messages(app, conversation_id)
    except Exception:
        metrics.FAILURES.labels(kind="embed").inc()
        raise
    while (step := summarize_step(ctx)) is not None:
        ctx.steps.append(step)
    boards = 0
    while board_step(ctx, force=force_board):
        boards += 1
    embedded_summaries = embed_summaries(app, conversation_id)
    return CatchUpResult(conversation_id, last_seq, embedded, tuple(ctx.steps), boards, embedded_summaries,
                         time.perf_counter() - started)


def catch_up_user(app: App, user_id: UUID, summarizer: Summarizer | None = None, *,
                  force_board: bool = False) -> list[CatchUpResult]:
    """`catch_up` every conversation of a user (newest first), e.g. after a bulk ingest."""
    summarizer = summarizer or make_summarizer(app.settings, app.counter)
    return [catch_up(app, user_id, c.id, summarizer, force_board=force_board)
            for c in app.store.list_conversations(user_id, limit=1_000_000)]


def regenerate(app: App, user_id: UUID, conversation_id: UUID, summarizer: Summarizer | None = None) -> CatchUpResult:
    """Forced regeneration: retire every live summary (edited ones too) and the board, rebuild.

    The retired summaries stay in the table as history (superseded by none). A crash between the
    retirement and the rebuild leaves a valid chain of raw messages that the next catch-up folds.
    """
    with app.pool.connection() as conn, conn.transaction():
        _owner(conn, user_id, conversation_id)
        conn.execute(QUERIES["lock_conversation_summaries"], {"conversation_id": conversation_id})
        key = {"user_id": user_id, "conversation_id": conversation_id}
        conn.execute(QUERIES["retire_live_summaries"], key)
        conn.execute(QUERIES["delete_board"], key)
    return catch_up(app, user_id, conversation_id, summarizer)


def edit_summary(app: App, user_id: UUID, summary_id: UUID, content: str) -> Summary:
    """Replace a live summary's text by hand: re-counted, re-embedded, marked edited.

    An edited summary stays as written until a forced regeneration; when it is later folded into
    a higher summary (or the master), its edited text is what the summarizer reads.
    """
    from memctx.models import check_text

    check_text(content, "summary text")
    if not content.strip():
        raise ValueError("a summary cannot be empty")
    vector = app.embedder.embed([content])[0]
    with app.pool.connection() as conn, conn.transaction():
        found = conn.execute(QUERIES["summary_conversation"], {"id": summary_id, "user_id": user_id}).fetchone()
        if found is not None:  # never between a step's read of the chain and its write
            conn.execute(QUERIES["lock_conversation_summaries"], {"conversation_id": found["conversation_id"]})
        row = conn.execute(QUERIES["edit_summary"], {
            "id": summary_id, "user_id": user_id, "content": content, "token_count": app.counter.count(content),
            "embedding": vector}).fetchone()
    if row is None:
        raise LookupError(f"no live summary {summary_id} for this user")
    return Summary.from_row(row)
