"""The LoCoMo evaluation of get_working_context, with baselines in the same run. No LLM.

Owns: `run_eval` — ingest the file (reusing stored conversations), bring summaries up to date
through the worker's library, then for every question and budget call
get_working_context(query = question) and score evidence recall, answer containment, tokens and
latency, per category and overall, beside the recency / dense-only / full-text-only baselines
and the full-history token count; and how many sentences of five words or more memctx's contexts
say more than once (`repeated_sentences`, of `sentences`).

With `scope="user"` (cross-conversation memory), every LoCoMo session is its own conversation of
one user per sample, with its date, closed as a finished conversation is; each question is asked
in a new, empty conversation of that user, and the context draws on all of the user's messages,
live summaries and long-term conversation summaries. The baselines are per conversation and are
left out there.

Every question is asked through a door (memctx.evaluate.doors: the Python call by default, or a
real server's HTTP API, proxy or MCP tools) at the moment its conversation ended: the last
message's time of the conversation asked about (user scope: of the sample's sessions).

The headline `evidence_recall` pools the gold turns of categories 1–4 (found / all). Beside it,
under their own names: the per-question mean over every category (`evidence_recall_question_mean`,
memctx's headline before 0.2) and category 5's (`evidence_recall_adversarial`).

Answer containment has a ceiling below 100 %: many gold answers are not said in any turn ("7 May
2023" for a turn that says "yesterday"). `answer_containment_ceiling` is the containment of the
full history, every turn rendered as the memory section renders it (session date headers, then
"Speaker: text" lines), and each budget's `answer_containment_ratio` is its containment over it.
`halves` gives the pooled figure of the odd and the even conversations (sorted by sample id) apart.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Sequence
from uuid import UUID, uuid5

import numpy as np

from memctx.assemble.context import ContextAssembler, assembler_for
from memctx.assemble.render import session_header, session_key, turn_line as memory_line
from memctx.assemble.repeats import sentence_tally
from memctx.evaluate.baselines import BASELINES, baseline_context, turn_line
from memctx.evaluate.doors import Door, PythonDoor
from memctx.evaluate.locomo import (CATEGORIES, CONTAINMENT_CATEGORIES, POOLED_CATEGORIES, Question,
                                    contains_answer, evidence_found, load_questions)
from memctx.evaluate.halves import HALVES, halves
from memctx.evaluate.retention import ChainTally, Gold, RetentionTally, chain_text, load_observations
from memctx.models import Message
from memctx.pipeline.catchup import catch_up
from memctx.pipeline.longterm import close_conversation
from memctx.retrieve.lexical import analyze
from memctx.retrieve.types import Fragment
from memctx.sql import QUERIES
from memctx.store import DEFAULT_USER
from memctx.store.ingest import ConversationInput, ingest, load_file
from memctx.tokens import message_tokens

Progress = Callable[[int], None]


@dataclass
class _Tally:
    """Scores of one arm (memctx or a baseline) at one budget, over the questions given to it;
    gold turns are pooled over those of `pooled` categories."""

    pooled: tuple[int, ...] = POOLED_CATEGORIES
    found: int = 0
    gold: int = 0
    recall: list[float] = field(default_factory=list)
    recall_adversarial: list[float] = field(default_factory=list)
    contain: list[float] = field(default_factory=list)
    contain_open: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)
    skipped: int = 0

    def add(self, q: Question, context: str, tokens: int, texts: dict[str, str], ms: float | None = None) -> None:
        self.tokens.append(tokens)
        if ms is not None:
            self.ms.append(ms)
        found = evidence_found(context, q.evidence, texts)
        if found is None:
            self.skipped += 1
        else:
            self.recall.append(found[0] / found[1])
            if q.category in self.pooled:
                self.found, self.gold = self.found + found[0], self.gold + found[1]
            if q.category == 5:
                self.recall_adversarial.append(found[0] / found[1])
        hit = contains_answer(context, q.answer)
        if hit is not None and q.category in CONTAINMENT_CATEGORIES:
            self.contain.append(float(hit))
        elif hit is not None and q.category == 3:
            self.contain_open.append(float(hit))

    def summary(self, *, latency: bool, ceiling: float | None = None) -> dict[str, Any]:
        contain = mean_of(self.contain)
        out = {"evidence_recall": round(self.found / self.gold, 4) if self.gold else None,
               "evidence_found": self.found, "evidence_gold": self.gold,
               "evidence_recall_question_mean": mean_of(self.recall),
               "evidence_recall_adversarial": mean_of(self.recall_adversarial),
               "answer_containment": contain,
               "answer_containment_ratio": round(contain / ceiling, 4) if contain is not None and ceiling else None,
               "answer_containment_open_domain": mean_of(self.contain_open), "mean_tokens": mean_of(self.tokens),
               "questions": len(self.recall), "skipped": self.skipped}
        if latency:
            out["p50_ms"] = percentile_of(self.ms, 50)
            out["p95_ms"] = percentile_of(self.ms, 95)
        return out


def mean_of(values: Sequence[float], digits: int = 4) -> float | None:
    return round(float(np.mean(values)), digits) if values else None


def percentile_of(values: Sequence[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 2) if values else None


def ensure_summaries(app: Any, user: UUID, conversation: UUID) -> str:
    """Bring a conversation's summaries up to date as the worker would (with the app's summarizer)."""
    catch_up(app, user, conversation)
    return "summaries brought up to date"


def prepare(app: Any, path: Path, user: UUID) -> tuple[dict[str, UUID], list[str]]:
    """Ingest (idempotent) and build summaries; sample_id → conversation id, and notes."""
    results = ingest(app.store, load_file(path, "locomo"), user)
    ids = {r.external_id: r.conversation_id for r in results}
    notes = sorted({ensure_summaries(app, user, cid) for cid in ids.values()})
    return ids, notes


SESSION_USERS = UUID("6f1c3e0a-6b1e-5b7e-9d3a-4c2a8f0e7d51")  # namespace of those users' ids


def session_user(sample_id: str) -> UUID:
    """The user a LoCoMo sample's sessions belong to in the cross-conversation variant."""
    return uuid5(SESSION_USERS, sample_id)


def prepare_sessions(app: Any, path: Path) -> tuple[dict[str, tuple[UUID, UUID]], list[str]]:
    """Each sample's sessions as closed conversations of the sample's own user, and an empty
    conversation to ask in (idempotent); sample_id → (user, conversation to ask in), and notes."""
    asked: dict[str, tuple[UUID, UUID]] = {}
    for sample in load_file(path, "locomo"):
        user = session_user(sample.external_id)
        sessions: dict[int, tuple[list, list]] = {}
        for message, record in zip(sample.messages, sample.records):
            msgs, records = sessions.setdefault(int(message.metadata["session"]), ([], []))
            msgs.append(message)
            records.append(record)
        convs = [ConversationInput(external_id=f"{sample.external_id}/session-{n}", title=sample.title,
                                   metadata=sample.metadata, messages=msgs, records=records)
                 for n, (msgs, records) in sorted(sessions.items())]
        for result in ingest(app.store, convs, user):
            catch_up(app, user, result.conversation_id)
            close_conversation(app, user, result.conversation_id, catch_up_first=False, explicit=True)
        ask = app.store.create_conversation(user, external_id=f"{sample.external_id}/questions")
        asked[sample.external_id] = (user, ask.id)
    return asked, ["each session its own closed conversation; questions asked in a new one, user scope"]


def run_eval(app: Any, path: Path, budgets: Sequence[int], *, user: UUID = DEFAULT_USER,
             assembler: ContextAssembler | None = None, limit: int | None = None,
             progress: Progress | None = None, baselines: bool = True,
             scope: Literal["conversation", "user"] = "conversation", door: Door | None = None) -> dict[str, Any]:
    """Score the working context through `door` (the Python call by default) on every question of
    a LoCoMo file at each budget."""
    assembler = assembler or assembler_for(app)
    door = door or PythonDoor(assembler)
    if scope == "user":
        asked, notes = prepare_sessions(app, path)
        baselines = False
        conversations = {sid: cid for sid, (_, cid) in asked.items()}
        owners = {cid: owner for owner, cid in asked.values()}
        messages = {cid: _user_messages(app, owner) for cid, owner in owners.items()}
        texts = {cid: {m.external_id: m.text for m in ms if m.external_id} for cid, ms in messages.items()}
        full = {cid: history_text(ms) for cid, ms in messages.items()}
        moments = {cid: max(m.created_at for m in ms) for cid, ms in messages.items()}
        line_tokens, history = {}, {}
    else:
        conversations, notes = prepare(app, path, user)
        owners = {cid: user for cid in conversations.values()}
        texts, line_tokens, history, full = _conversation_data(app, user, conversations)
        moments = {cid: app.store.get_conversation(user, cid).last_message_at for cid in conversations.values()}
    halved = {b: {h: {"memctx": _Tally(), **{k: _Tally() for k in BASELINES}} for h in ("odd", "even")}
              for b in budgets}
    questions = load_questions(path)[:limit] if limit else load_questions(path)
    system = assembler.options.system_prompt
    arms = {b: {"memctx": _Tally(), **{k: _Tally() for k in BASELINES}} for b in budgets}
    observations = load_observations(path)
    gold = {cid: Gold.of(observations.get(sid, []), texts[cid]) for sid, cid in conversations.items()}
    kept = {b: {"memctx": RetentionTally(), **{k: RetentionTally() for k in BASELINES}} for b in budgets}
    by_cat = {b: {c: _Tally(pooled=(c,)) for c in CATEGORIES} for b in budgets}
    half_of = halves(conversations)  # the conversations sorted by sample_id, odd and even positions
    by_half = {b: {h: {"memctx": _Tally(), **{k: _Tally() for k in BASELINES}} for h in HALVES} for b in budgets}
    ceiling, ceiling_by_cat = _ceiling(questions, conversations, full)
    repeats = {b: Counter() for b in budgets}  # memctx's contexts: sentences said more than once, sentences
    for q in questions:  # memctx first, alone, so its latency is not mixed with the baselines'
        cid = conversations[q.sample_id]
        for budget in budgets:
            wc = door.ask(owners[cid], cid, q.question, budget, scope=scope, now=moments[cid])
            repeated, said = sentence_tally(wc.messages)
            repeats[budget].update(repeated=repeated, sentences=said)
            arms[budget]["memctx"].add(q, wc.text, wc.tokens, texts[cid], wc.ms)
            halved[budget][half_of[q.sample_id]]["memctx"].add(q, wc.text, wc.tokens, texts[cid])
            kept[budget]["memctx"].add(gold[cid], wc.text, wc.tokens)
            by_cat[budget][q.category].add(q, wc.text, wc.tokens, texts[cid], wc.ms)
            by_half[budget][half_of[q.sample_id]]["memctx"].add(q, wc.text, wc.tokens, texts[cid], wc.ms)
        if progress:
            progress(1)
    for q in questions if baselines else ():
        cid = conversations[q.sample_id]
        ranked = _ranked_rows(app, assembler, user, cid, q.question)
        for budget in budgets:
            for kind in BASELINES:
                context, tokens = baseline_context(ranked, kind, system, q.question, budget, app.counter,
                                                   line_tokens[cid])
                arms[budget][kind].add(q, context, tokens, texts[cid])
                halved[budget][half_of[q.sample_id]][kind].add(q, context, tokens, texts[cid])
                by_half[budget][half_of[q.sample_id]][kind].add(q, context, tokens, texts[cid])
                kept[budget][kind].add(gold[cid], context, tokens)
        if progress:
            progress(1)
    return {
        "dataset": str(path), "scope": scope, "door": door.name, "questions_total": len(questions),
        "conversations": len(conversations), "notes": notes,
        "full_history_tokens": {"mean": round(float(np.mean(list(history.values()))), 1) if history else None,
                                "per_conversation": history},
        "answer_containment_ceiling": ceiling,
        "answer_containment_ceiling_by_category": {CATEGORIES[c]: v for c, v in ceiling_by_cat.items()},
        "chain_retention": chain_retention(app, observations, conversations, owners) if scope == "conversation"
        else None,
        "budgets": {str(b): {**arms[b]["memctx"].summary(latency=True, ceiling=ceiling),
                             "repeated_sentences": repeats[b]["repeated"], "sentences": repeats[b]["sentences"],
                             "retention": kept[b]["memctx"].summary(),
                             "baselines": {k: {**arms[b][k].summary(latency=False, ceiling=ceiling),
                                               "retention": kept[b][k].summary()}
                                           for k in BASELINES} if baselines else {},
                             "by_category": {CATEGORIES[c]: t.summary(latency=True, ceiling=ceiling_by_cat.get(c))
                                             for c, t in sorted(by_cat[b].items()) if t.recall or t.skipped},
                             "halves": {h: {arm: {"evidence_found": t.found, "evidence_gold": t.gold}
                                            for arm, t in arms_of.items() if arm == "memctx" or baselines}
                                        for h, arms_of in halved[b].items()}}
                    for b in budgets},
        "halves": {h: {str(b): {**by_half[b][h]["memctx"].summary(latency=False),
                                "baselines": {k: by_half[b][h][k].summary(latency=False) for k in BASELINES}
                                if baselines else {}}
                       for b in budgets} for h in HALVES},
    }


def chain_retention(app: Any, observations: Mapping[str, Sequence[Any]], conversations: Mapping[str, UUID],
                    owners: Mapping[UUID, UUID]) -> dict[str, Any]:
    """The gold observations each conversation's live summary chain and board keep, of those
    whose evidence turns the chain covers, per 100 tokens of the chain and board as rendered."""
    tally = ChainTally()
    for sid, cid in sorted(conversations.items()):
        with app.pool.connection() as conn:
            rows = conn.execute(QUERIES["current_context"], {
                "user_id": owners[cid], "conversation_id": cid, "recent_limit": 0, "history_limit": 0,
                "history_tokens": 0}).fetchall()
        text, covered = chain_text(rows)
        texts = {m.external_id: m.text for m in app.store.list_messages(owners[cid], cid)
                 if m.external_id and m.seq <= covered}
        tally.add(sid, Gold.of(observations.get(sid, []), texts), text, app.counter.count(text) if text else 0)
    return tally.summary()


def history_text(messages: Sequence[Message]) -> str:
    """Every turn of `messages` (in conversation order) as the memory section renders a turn: a
    date header whenever the session changes, then "Speaker: text" lines."""
    lines, key = [], None
    for m in messages:
        fragment = Fragment(id=m.id, conversation_id=m.conversation_id, role=m.role, text=m.text, seq=m.seq,
                            time=m.created_at, external_id=m.external_id, speaker=m.metadata.get("speaker"),
                            session=m.metadata.get("session"))
        if session_key(fragment) != key:
            key = session_key(fragment)
            lines.append(session_header(fragment))
        lines.append(memory_line(fragment))
    return "\n".join(lines)


def _ceiling(questions: Sequence[Question], conversations: dict[str, UUID],
             full: dict[UUID, str]) -> tuple[float | None, dict[int, float | None]]:
    """Answer containment of the full history (categories 1, 2, 4), overall and per category."""
    hits: dict[int, list[float]] = {c: [] for c in CONTAINMENT_CATEGORIES}
    for q in questions:
        hit = contains_answer(full[conversations[q.sample_id]], q.answer) if q.category in hits else None
        if hit is not None:
            hits[q.category].append(float(hit))
    return mean_of([h for c in hits.values() for h in c]), {c: mean_of(h) for c, h in hits.items()}


def _user_messages(app: Any, user: UUID) -> list[Message]:
    """Every message of the user (the sessions of one sample), conversation by conversation."""
    return [m for conv in app.store.list_conversations(user, limit=1000) for m in app.store.list_messages(user, conv.id)]


def _conversation_data(app: Any, user: UUID, conversations: dict[str, UUID]):
    texts: dict[UUID, dict[str, str]] = {}
    line_tokens: dict[UUID, dict[UUID, int]] = {}
    history: dict[str, int] = {}
    full: dict[UUID, str] = {}
    for sid, cid in conversations.items():
        messages = app.store.list_messages(user, cid)
        full[cid] = history_text(messages)
        texts[cid] = {m.external_id: m.text for m in messages if m.external_id}
        fake_rows = [{"id": m.id, "seq": m.seq, "role": m.role, "text": m.text, "created_at": m.created_at,
                      "speaker": m.speaker} for m in messages]
        lines = [turn_line(r) for r in fake_rows]
        counts = app.counter.count_many(lines)
        line_tokens[cid] = {r["id"]: c for r, c in zip(fake_rows, counts)}
        history[sid] = message_tokens(app.counter, "system", "\n".join(lines))
    return texts, line_tokens, history, full


def _ranked_rows(app: Any, assembler: ContextAssembler, user: UUID, cid: UUID, question: str) -> list[dict]:
    search = assembler.search
    analysis = analyze(question, search.speakers(user, cid))
    vec = search.embed_query(question)
    with app.pool.connection() as conn:
        return conn.execute(QUERIES["rank_conversation"], {"user_id": user, "conversation_id": cid,
                                                           "query_vec": vec, "tsquery": analysis.tsquery}).fetchall()
