"""The summary hierarchy in the database: apply the pure chain rules, step by step.

Owns: reading a conversation's live chain (one query), applying `memctx.summarize.chain.plan_next`
actions to it — each action one transaction under a per-conversation advisory lock, so a crash
leaves the old chain or the new one, never half of either — editing a summary by hand and forcing
a regeneration. `catch_up` brings one conversation fully up to date (embeddings, chain, board) and
is the one entry point the worker, the CLI and the evaluation call.

It must not decide the rules (chain.py does) or write summary text (the summarizers do), and it
knows nothing of queues (`memctx.pipeline.dispatch` does).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterator, Literal, Mapping
from uuid import UUID

from psycopg.pq import TransactionStatus

from memctx import metrics
from memctx.app import App
from memctx.config import Settings
from memctx.models import Summary, check_text
from memctx.pipeline.board import board_step
from memctx.pipeline.embedding import embed_messages, embed_summaries
from memctx.pipeline.learning import learn_all
from memctx.pipeline.passages import cut_passages
from memctx.sql import QUERIES
from memctx.store import UnknownConversation
from memctx.summarize.chain import Action, ChainElement, ChainParams, plan_next
from memctx.summarize.length import capped, summary_cap
from memctx.summarize.types import SourceText, Summarizer


def chain_params(settings: Settings) -> ChainParams:
    return ChainParams(n_sum=settings.n_sum, sum_window=settings.sum_window, n_sum_sum=settings.n_sum_sum,
                       max_sum_lvl=settings.max_sum_lvl, summary_length=settings.summary_length)


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

    def as_json(self) -> dict[str, Any]:
        return {"id": str(self.id), "kind": self.kind, "level": self.level, "is_master": self.is_master,
                "first_seq": self.first_seq, "last_seq": self.last_seq, "tokens": self.token_count,
                "edited": self.edited, "role": self.role, "text": self.text}


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
    passages: int = 0  # passages of long messages stored
    learned: int = 0  # candidates the profile's learner found in the new messages (memctx.pipeline.learning)

    @property
    def summaries_written(self) -> int:
        return len(self.steps)

    def as_json(self) -> dict[str, Any]:
        return {"conversation_id": str(self.conversation_id), "last_seq": self.last_seq,
                "embedded_messages": self.embedded_messages, "summaries_written": self.summaries_written,
                "board_updates": self.board_updates, "embedded_summaries": self.embedded_summaries,
                "passages": self.passages, "learned": self.learned, "seconds": round(self.seconds, 3)}


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


def cap_of(conn, ctx: _Context, action: Action, items: list[ChainItem]) -> int:
    """The tokens a summary may take: half of the messages it covers (and `summary_length`), and
    never more than its sources. Half of its sources would halve again at every level of
    summaries of summaries: a level-3 summary of 27 short turns was one sentence."""
    sources = sum(i.token_count or 0 for i in items)
    if action.source_kind == "message":
        return summary_cap(sources, ctx.params.summary_length)
    covered = conn.execute(QUERIES["covered_tokens"], {
        "user_id": ctx.user_id, "conversation_id": ctx.conversation_id, "first_seq": action.first_seq,
        "last_seq": action.last_seq}).fetchone()["tokens"]
    return max(1, min(summary_cap(covered, ctx.params.summary_length), sources))


def _write_new(conn, ctx: _Context, action: Action, items: list[ChainItem]) -> Step:
    cap = cap_of(conn, ctx, action, items)
    draft = capped(ctx.summarizer.summarize([i.source() for i in items], level=action.level,
                                            is_master=action.is_master, max_tokens=cap), cap, ctx.app.counter)
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
    cap = cap_of(conn, ctx, action, items)
    draft = capped(ctx.summarizer.summarize([i.source() for i in merged], level=action.level, is_master=True,
                                            max_tokens=cap, previous=master.text), cap, ctx.app.counter)
    row = conn.execute(QUERIES["merge_into_master"], {
        "id": master.id, "conversation_id": ctx.conversation_id, "user_id": ctx.user_id, "content": draft.content,
        "added": [i.id for i in merged], "last_seq": action.last_seq, "token_count": draft.token_count,
        "summarizer": draft.summarizer}).fetchone()
    if row is None:
        raise RuntimeError(f"master summary {master.id} left the chain during a locked step")
    _supersede(conn, ctx, [i.id for i in merged], master.id)
    return Step(action.rule, action.level, master.id, action.first_seq, action.last_seq, draft.token_count, True)


def _supersede(conn, ctx: _Context, ids: list[UUID], by: UUID) -> None:
    done = conn.execute(QUERIES["supersede_summaries"], {"ids": ids, "superseded_by": by, "user_id": ctx.user_id,
                                                         "conversation_id": ctx.conversation_id}).fetchall()
    if len(done) != len(ids):  # only possible if the lock were bypassed: refuse to fork the chain
        raise RuntimeError(f"expected to supersede {len(ids)} summaries, superseded {len(done)}")


# Entry points ----------------------------------------------------------------------------------

def catch_up(app: App, user_id: UUID, conversation_id: UUID, summarizer: Summarizer | None = None, *,
             force_board: bool = False) -> CatchUpResult:
    """Bring one conversation's chain and board fully up to date, synchronously.

    Embeds messages stored without an embedding, cuts the long ones into passages (embedded,
    `memctx.pipeline.passages`), applies the hierarchy rules until none applies
    (each action one transaction), folds every complete group of `update_frequency` new messages
    into the board (with `force_board`, the incomplete tail too), learns the profile and tool
    procedures from the new messages (`memctx.pipeline.learning`), and embeds the summaries still
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
        ctx = _Context(app, user_id, conversation_id, summarizer or app.summarizer, chain_params(app.settings))
        return _catch_up(ctx, owner["last_seq"], force_board, started)


@contextmanager
def _catch_up_lock(app: App, conversation_id: UUID, poll_s: float = 0.05) -> Iterator[None]:
    """Hold the conversation's catch-up lock, waiting for a running catch-up to finish.

    Polls a try-lock rather than blocking, so a long catch-up never trips statement_timeout. The
    guard is autocommit, so no transaction stays open meanwhile; a connection that comes in a
    transaction (an end user's, `db.CallerPool`) holds the session lock inside that one.
    """
    key = {"conversation_id": conversation_id}
    with app.pool.connection() as guard:
        own_autocommit = guard.info.transaction_status == TransactionStatus.IDLE
        if own_autocommit:
            guard.autocommit = True
        while not guard.execute(QUERIES["try_lock_catch_up"], key).fetchone()["locked"]:
            time.sleep(poll_s)
        try:
            yield
        finally:
            try:
                guard.execute(QUERIES["unlock_catch_up"], key)
                if own_autocommit:
                    guard.autocommit = False
            except Exception:
                guard.close()  # a connection that may still hold the lock never goes back to the pool


def _catch_up(ctx: _Context, last_seq: int, force_board: bool, started: float) -> CatchUpResult:
    app, conversation_id = ctx.app, ctx.conversation_id
    try:
        embedded = embed_messages(app, ctx.user_id, conversation_id)
        passages = cut_passages(app, ctx.user_id, conversation_id)
    except Exception:
        metrics.FAILURES.labels(kind="embed").inc()
        raise
    while (step := summarize_step(ctx)) is not None:
        ctx.steps.append(step)
    boards = 0
    while board_step(app, ctx.user_id, conversation_id, ctx.summarizer, force=force_board):
        boards += 1
    learned = learn_all(app, ctx.user_id, conversation_id)
    embedded_summaries = embed_summaries(app, ctx.user_id, conversation_id)
    return CatchUpResult(conversation_id, last_seq, embedded, tuple(ctx.steps), boards, embedded_summaries,
                         time.perf_counter() - started, passages, learned.candidates)


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
        conn.execute(QUERIES["reset_profile_progress"], key)  # learned again: nothing twice, nothing deleted back
    return catch_up(app, user_id, conversation_id, summarizer)


def edit_summary(app: App, user_id: UUID, summary_id: UUID, content: str) -> Summary:
    """Replace a live summary's text by hand: re-counted, re-embedded, marked edited.

    An edited summary stays as written until a forced regeneration; when it is later folded into
    a higher summary (or the master), its edited text is what the summarizer reads.
    """
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
