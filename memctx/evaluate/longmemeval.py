"""The LongMemEval evaluation of get_working_context, with whole-turn baselines in the same run. No LLM.

Owns: reading LongMemEval's format (plain JSON or .gz: `question_id`, `question_type`,
`question`, `answer`, `question_date`, `haystack_session_ids`, `haystack_dates`,
`haystack_sessions` of `{role, content, has_answer?}` turns, `answer_session_ids`), storing each
instance as a chat app would (one user per instance; each haystack session its own conversation
with its date, summarized and closed; reused when already stored), asking the question in a new
conversation of that user with user scope at the question's date (relative dates resolve against
`question_date`, not the wall clock), and scoring.

The headline pools the evidence turns (`has_answer`) whose whole stored text is in the context.
Beside it: session recall (answer sessions with at least one evidence turn in the context), the
evidence turns memctx's context cites (among its sources, whole or as an excerpt of a long
message: `evidence_cited`), the evidence turns found whole or cited with each of their
sentences in the context (with "…" for a sentence another quoted turn says: `evidence_quoted`),
answer containment for short answers (and its ceiling: the whole history's, with the question),
tokens, p50 / p95 latency, sentences said more than once (`repeated_sentences`, of `sentences`),
the same by question type, and the BM25, dense and RRF(BM25, dense) baselines: whole turns of the
user ranked by plain Okapi BM25, by cosine over memctx's own stored vectors, and by their
reciprocal-rank fusion, packed best first into the same budget and rendered as memory lines.
"""

from __future__ import annotations

import gzip
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence
from uuid import UUID, uuid5

import numpy as np

from memctx.assemble.context import ContextAssembler, assembler_for
from memctx.assemble.repeats import sentence_tally, sentences
from memctx.assemble.types import Source
from memctx.evaluate.baselines import bm25_scores, bm25_terms, pack, rrf_order, turn_line
from memctx.evaluate.doors import Door, PythonDoor
from memctx.evaluate.halves import HALVES, halves
from memctx.evaluate.locomo import contains_answer, normalize
from memctx.evaluate.run import mean_of, percentile_of
from memctx.models import InvalidInput, NewMessage
from memctx.pipeline.catchup import catch_up
from memctx.pipeline.longterm import close_conversation
from memctx.sql import QUERIES
from memctx.store.ingest import ConversationInput, ingest

Progress = Callable[[int], None]

TYPES = ("single-session-user", "single-session-assistant", "single-session-preference", "multi-session",
         "knowledge-update", "temporal-reasoning")
BASELINES = ("bm25", "dense", "rrf")
# Answer containment is scored for answers of at most this many words: a long gold answer (a
# preference's description, a rubric) is never said verbatim.
SHORT_ANSWER_WORDS = 5
# Turns of one session are this far apart in time: their order survives any sort by time.
TURN_STEP = timedelta(seconds=10)
INSTANCE_USERS = UUID("0b7d3c52-1f4e-5a09-8c6d-2e9f4a7b1c38")  # namespace of the instances' users


@dataclass(frozen=True)
class Session:
    session_id: str  # unique within the instance: the dataset's id, "#2" added for a repeat
    date: datetime
    turns: tuple[Mapping[str, Any], ...]
    source_id: str  # the dataset's id, as answer_session_ids names it


@dataclass(frozen=True)
class Instance:
    """One LongMemEval question with its user's history."""

    question_id: str
    question_type: str
    question: str
    answer: str
    question_date: datetime
    sessions: tuple[Session, ...]
    answer_sessions: tuple[str, ...]

    @property
    def evidence(self) -> dict[str, str]:
        """External id of each evidence turn → the session it was said in (the dataset's id)."""
        return {turn_id(s.session_id, i): s.source_id for s in self.sessions for i, t in enumerate(s.turns)
                if t.get("has_answer")}


def turn_id(session_id: str, index: int) -> str:
    """A turn's external id: its session and position (sessions are unique within an instance)."""
    return f"{session_id}:{index}"


def instance_user(question_id: str) -> UUID:
    return uuid5(INSTANCE_USERS, question_id)


def parse_date(value: Any, record: str) -> datetime:
    """LongMemEval dates look like '2023/05/20 (Sat) 02:21', in UTC."""
    try:
        return datetime.strptime(str(value).strip(), "%Y/%m/%d (%a) %H:%M").replace(tzinfo=timezone.utc)
    except ValueError:
        raise InvalidInput(f"unparsable date {value!r}", record=record) from None


def read_instances(path: Path) -> list[Instance]:
    """Every instance of a LongMemEval file (plain JSON or gzipped), checked before anything is stored."""
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"not a JSON file: {exc}", record=path.name) from None
    if not isinstance(data, list):
        raise InvalidInput("a LongMemEval file is a JSON list of instances", record=path.name)
    return [_instance(item, i, path.name) for i, item in enumerate(data)]


def _instance(item: Any, index: int, source: str) -> Instance:
    qid = str(item.get("question_id", f"#{index}")) if isinstance(item, dict) else f"#{index}"
    record = f"{source} {qid}"
    keys = ("question_id", "question_type", "question", "answer", "question_date", "haystack_session_ids",
            "haystack_dates", "haystack_sessions")
    if not isinstance(item, dict) or any(k not in item for k in keys):
        raise InvalidInput(f"an instance needs {', '.join(keys)}", record=record)
    ids, dates, sessions = item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"]
    if not (isinstance(sessions, list) and len(ids) == len(dates) == len(sessions)):
        raise InvalidInput("haystack_session_ids, haystack_dates and haystack_sessions differ in length", record=record)
    built, seen = [], Counter()
    for sid, when, turns in zip(map(str, ids), dates, sessions):
        if not isinstance(turns, list) or any(not isinstance(t, dict) or "role" not in t or "content" not in t
                                              for t in turns):
            raise InvalidInput(f"session {sid}: each turn needs role and content", record=record)
        seen[sid] += 1  # a few haystacks hold one session twice, at two dates: two conversations
        built.append(Session(sid if seen[sid] == 1 else f"{sid}#{seen[sid]}", parse_date(when, record), tuple(turns),
                             sid))
    return Instance(question_id=qid, question_type=str(item["question_type"]), question=str(item["question"]),
                    answer=str(item["answer"]), question_date=parse_date(item["question_date"], record),
                    sessions=tuple(built), answer_sessions=tuple(map(str, item.get("answer_session_ids") or ())))


def conversations(instance: Instance) -> list[ConversationInput]:
    """The instance's sessions as conversations of its user, each turn at its session's date."""
    out = []
    for number, session in enumerate(instance.sessions):
        messages, records = [], []
        for i, turn in enumerate(session.turns):
            if not str(turn["content"]).strip():
                continue  # an empty turn is no message (LongMemEval has a few)
            record = f"{instance.question_id} {turn_id(session.session_id, i)}"
            messages.append(NewMessage.build(str(turn["role"]), str(turn["content"]),
                                             external_id=turn_id(session.session_id, i),
                                             created_at=session.date + i * TURN_STEP,
                                             metadata={"session": number}, record=record))
            records.append(record)
        if messages:
            out.append(ConversationInput(external_id=f"{instance.question_id}/{session.session_id}", title=None,
                                         metadata={"source": "longmemeval"}, messages=messages, records=records))
    return out


def prepare(app: Any, instance: Instance) -> UUID:
    """Store the instance (idempotent): its sessions as closed conversations of its user, and an
    empty conversation to ask in; the conversation to ask in. A session already closed with nothing
    new is not summarized again, only caught up (which derives what it lacks, such as passages)."""
    user = instance_user(instance.question_id)
    for result in ingest(app.store, conversations(instance), user):
        conv = app.store.get_conversation(user, result.conversation_id)
        if result.messages or conv.closed_at is None:
            catch_up(app, user, result.conversation_id)
            close_conversation(app, user, result.conversation_id, catch_up_first=False, explicit=True)
        else:  # stored before: what a catch-up derives now and did not then (passages)
            catch_up(app, user, result.conversation_id)
    return app.store.create_conversation(user, external_id=f"{instance.question_id}/question").id


@dataclass
class _Tally:
    """Scores of one arm at one budget over the questions given to it."""

    found: int = 0
    gold: int = 0
    sessions_found: int = 0
    sessions_gold: int = 0
    contain: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)
    questions: int = 0
    cited: int | None = None  # evidence turns among the context's sources, whole or as an excerpt
    # evidence turns found whole, or cited with each of their sentences in the context word for
    # word (with "…" for a sentence another quoted turn says: each thing once)
    quoted: int | None = None

    def add(self, instance: Instance, context: str, tokens: int, texts: Mapping[str, str],
            ms: float | None = None, sources: Sequence[Source] | None = None) -> None:
        self.questions += 1
        self.tokens.append(tokens)
        if ms is not None:
            self.ms.append(ms)
        evidence = {e: s for e, s in instance.evidence.items() if e in texts}
        hits = {e for e in evidence if texts[e] in context}
        if sources is not None:
            named = {x.external_id for x in sources if x.kind == "message"}
            self.cited = (self.cited or 0) + len(named & set(evidence))
            self.quoted = (self.quoted or 0) + len(hits | {
                e for e in named & set(evidence) if all(s in context for s in sentences(texts[e]))})
        self.found, self.gold = self.found + len(hits), self.gold + len(evidence)
        sessions = {s for s in instance.answer_sessions if s in evidence.values()}
        self.sessions_gold += len(sessions)
        self.sessions_found += len({evidence[e] for e in hits} & sessions)
        hit = short_answer_in(context, instance.answer)
        if hit is not None:
            self.contain.append(float(hit))

    def summary(self, *, latency: bool) -> dict[str, Any]:
        out = {"evidence_recall": _ratio(self.found, self.gold), "evidence_found": self.found,
               "evidence_gold": self.gold, "session_recall": _ratio(self.sessions_found, self.sessions_gold),
               "answer_containment": mean_of(self.contain), "answer_questions": len(self.contain),
               "mean_tokens": mean_of(self.tokens), "questions": self.questions}
        if self.cited is not None:
            out["evidence_cited"] = self.cited
            out["evidence_quoted"] = self.quoted
        if latency:
            out["p50_ms"] = percentile_of(self.ms, 50)
            out["p95_ms"] = percentile_of(self.ms, 95)
        return out


def short_answer_in(text: str, answer: str) -> bool | None:
    """Whether `text` holds the answer; None when the answer is long (or empty) and not scored."""
    return contains_answer(text, answer) if len(normalize(answer).split()) <= SHORT_ANSWER_WORDS else None


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def run_longmemeval(app: Any, path: Path, budgets: Sequence[int], *, assembler: ContextAssembler | None = None,
                    limit: int | None = None, progress: Progress | None = None,
                    door: Door | None = None) -> dict[str, Any]:
    """Score the working context through `door` (the Python call by default; user scope, asked at
    each question's date) on every instance of a LongMemEval file at each budget, beside the
    whole-turn baselines; also apart for the odd and the even instances (sorted by question_id)."""
    instances = read_instances(path)[:limit] if limit else read_instances(path)
    assembler = assembler or assembler_for(app)
    door = door or PythonDoor(assembler)
    system = assembler.options.system_prompt
    half_by_id = halves(i.question_id for i in instances)  # of the instances asked (each budget's "halves")
    halved = {b: {h: {"memctx": _Tally(), **{k: _Tally() for k in BASELINES}} for h in ("odd", "even")}
              for b in budgets}
    arms = {b: {"memctx": _Tally(), **{k: _Tally() for k in BASELINES}} for b in budgets}
    by_type = {b: {t: {"memctx": _Tally(), **{k: _Tally() for k in BASELINES}} for t in TYPES} for b in budgets}
    half_of = halves(i.question_id for i in read_instances(path))  # of the whole file, whatever the limit
    by_half = {b: {h: {"memctx": _Tally(), **{k: _Tally() for k in BASELINES}} for h in HALVES} for b in budgets}
    history, turns, prepared, passages = [], 0, [], []
    # answer containment of the whole history as the baselines render it, and the question, which
    # every context holds
    ceiling: list[float] = []
    repeats = {b: Counter() for b in budgets}  # memctx's contexts: sentences said more than once, sentences
    for instance in instances:
        user = instance_user(instance.question_id)
        t0 = time.perf_counter()
        asked = prepare(app, instance)
        prepared.append(time.perf_counter() - t0)
        passages.append(_passage_stats(app, user))
        rows = _user_rows(app, user, assembler.search.embed_query(instance.question))
        texts = {r["external_id"]: r["text"] for r in rows}
        lines = [turn_line(r) for r in rows]
        line_tokens = {r["id"]: c for r, c in zip(rows, app.counter.count_many(lines))}
        history.append(sum(line_tokens.values()))
        whole = short_answer_in("\n".join([*lines, instance.question]), instance.answer)
        if whole is not None:
            ceiling.append(float(whole))
        turns += len(rows)
        for budget in budgets:  # memctx first, alone, so its latency is not mixed with the baselines'
            wc = door.ask(user, asked, instance.question, budget, scope="user", now=instance.question_date)
            repeated, said = sentence_tally(wc.messages)
            repeats[budget].update(repeated=repeated, sentences=said)
            half = by_half[budget][half_of[instance.question_id]]
            for tally in _tallies(arms, by_type, budget, instance, "memctx", half):
                tally.add(instance, wc.text, wc.tokens, texts, wc.ms, wc.sources)
            halved[budget][half_by_id[instance.question_id]]["memctx"].add(instance, wc.text, wc.tokens, texts)
        for kind, ranked in baseline_rankings(rows, instance.question).items():
            for budget in budgets:
                context, tokens = pack(ranked, system, instance.question, budget, app.counter, line_tokens)
                half = by_half[budget][half_of[instance.question_id]]
                for tally in [*_tallies(arms, by_type, budget, instance, kind, half),
                              halved[budget][half_by_id[instance.question_id]][kind]]:
                    tally.add(instance, context, tokens, texts)
        if progress:
            progress(1)
    return {
        "dataset": str(path), "scope": "user", "door": door.name, "questions_total": len(instances), "turns": turns,
        "notes": ["each haystack session its own closed conversation of the instance's user; the question asked "
                  "in a new one, user scope, at question_date"],
        "full_history_tokens": {"mean": round(float(np.mean(history)), 1) if history else None},
        # Many short answers are worked out, never said ("10 years", "59.6"): no context holds them.
        "answer_containment_ceiling": mean_of(ceiling),
        # What this run's storing and catch-up took per instance (near 0 for one stored before and
        # caught up), and what the long messages' passages cost: rows and MB per instance.
        "prepare_s": {"mean": mean_of(prepared, 2), "p95": percentile_of(prepared, 95)},
        "passages": {"rows": mean_of([p["passages"] for p in passages], 1),
                     "messages": mean_of([p["messages"] for p in passages], 1),
                     "mb": mean_of([p["bytes"] / 1e6 for p in passages], 2)},
        "budgets": {str(b): {**arms[b]["memctx"].summary(latency=True),
                             "repeated_sentences": repeats[b]["repeated"], "sentences": repeats[b]["sentences"],
                             "baselines": {k: arms[b][k].summary(latency=False) for k in BASELINES},
                             "by_type": {t: {**v["memctx"].summary(latency=True),
                                             "baselines": {k: v[k].summary(latency=False) for k in BASELINES}}
                                         for t, v in by_type[b].items() if v["memctx"].questions},
                             "halves": {h: {arm: {"evidence_found": t.found, "evidence_gold": t.gold}
                                            for arm, t in arms_of.items()} for h, arms_of in halved[b].items()}}
                    for b in budgets},
        # the instances sorted by question_id, odd and even positions (memctx.evaluate.halves)
        "halves": {h: {str(b): {**by_half[b][h]["memctx"].summary(latency=False),
                                "baselines": {k: by_half[b][h][k].summary(latency=False) for k in BASELINES}}
                       for b in budgets} for h in HALVES},
        "profile": profile_storage(app, [instance_user(i.question_id) for i in instances]),
    }


def profile_storage(app: Any, users: Sequence[UUID]) -> dict[str, Any]:
    """What the users' profiles hold (memctx.profile_storage): items by status, sources and bytes,
    the mean per user."""
    with app.pool.connection() as conn:
        rows = conn.execute(QUERIES["profile_storage_of"], {"user_ids": list(users)}).fetchall()
    if not rows:
        return {"users": 0}
    keys = ("active_items", "replaced_items", "deleted_items", "sources", "procedures", "bytes")
    return {"users": len(rows), **{f"mean_{k}": mean_of([float(r[k]) for r in rows], 1) for k in keys}}


def _passage_stats(app: Any, user: UUID) -> Mapping[str, Any]:
    with app.pool.connection() as conn:
        return conn.execute(QUERIES["passage_stats"], {"user_id": user}).fetchone()


def _tallies(arms: dict, by_type: dict, budget: int, instance: Instance, arm: str,
             half: dict[str, _Tally] | None = None) -> list[_Tally]:
    kept = [arms[budget][arm]] + ([half[arm]] if half is not None else [])
    if instance.question_type in by_type[budget]:
        kept.append(by_type[budget][instance.question_type][arm])
    return kept


def baseline_rankings(rows: Sequence[Mapping[str, Any]], question: str) -> dict[str, list[Mapping[str, Any]]]:
    """The user's turns best first by BM25 (matching turns only), by cosine, and by RRF of the two."""
    scores = bm25_scores(bm25_terms(question), [bm25_terms(r["text"]) for r in rows])
    bm25 = [rows[i] for i in sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: -scores[i])]
    dense = sorted((r for r in rows if r["similarity"] is not None), key=lambda r: -r["similarity"])
    by_id = {r["id"]: r for r in rows}
    fused = [by_id[i] for i in rrf_order([r["id"] for r in bm25], [r["id"] for r in dense])]
    return {"bm25": bm25, "dense": dense, "rrf": fused}


def _user_rows(app: Any, user: UUID, vec: np.ndarray) -> list[dict[str, Any]]:
    with app.pool.connection() as conn:
        return conn.execute(QUERIES["rank_user"], {"user_id": user, "query_vec": vec}).fetchall()
