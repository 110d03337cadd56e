"""Score the summary board against LoCoMo's gold annotations, with no database.

Owns: `memctx eval board`. Each conversation is folded into a board exactly as the worker does
(`update_frequency` messages per update, the configured summarizer rules), every item citing the
turns it came from by their dia_id. The board is then read against the authors' annotations,
which only this measure reads (the memory system never does):

- fact precision: share of key facts whose source turn is the evidence of a gold `observation`;
- fact coverage: gold observations whose evidence turn a key fact cites, in total and per 100
  tokens of the key-facts section;
- the same precision for action items and constraints;
- section sizes: the most items any section held after any update, against its cap;
- summaries: ROUGE-L F1 of each session's extractive summary against the gold `session_summary`,
  at the gold summary's length, beside a lead-k baseline (the session's first turns) of the
  same length as the summary;
- the detectors on hand-labelled dev utterances (`data/board_labels*.jsonl`, a tuning set and a
  holdout labelled blind after tuning): precision and recall per label.

The summarizer is the key-free extractive one unless another is passed (`--llm`: the configured
OpenAI-compatible model, falling back to the extractive one per call); then its own counts (calls,
fallbacks, unsourced items) come along. `--conversations` and `--sessions` cut the file to a
subset a slow model gets through in minutes; the same flags give the extractive figures on it.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence
from uuid import NAMESPACE_URL, uuid5

from memctx.evaluate.locomo import parse_evidence
from memctx.store.ingest import parse_locomo
from memctx.summarize import detect
from memctx.summarize.extractive import ExtractiveSummarizer
from memctx.summarize.length import fit
from memctx.summarize.types import SECTIONS, Board, BoardItem, SourceText, Summarizer
from memctx.tokens import TokenCounter
from memctx.words import split_sentences

# Utterances of the dev split labelled by hand: "tuning" is what the detectors were tuned on,
# "holdout" was labelled blind afterwards (also dev: neither is a test split).
LABEL_SETS: Mapping[str, Path] = {name: Path(__file__).with_name("data") / f"board_labels{suffix}.jsonl"
                                  for name, suffix in (("tuning", ""), ("holdout", "_holdout"))}
PRECISION_SECTIONS = ("key_facts", "action_items", "constraints")
# Each detector of the board and the labels of the labelled set it should find.
DETECTOR_LABELS: Mapping[str, frozenset[str]] = {
    "constraints": frozenset({"preference", "correction"}),
    "corrections": frozenset({"correction"}),
    "action_items": frozenset({"commitment"}),
    "questions": frozenset({"question"}),
}


@dataclass(frozen=True)
class Sample:
    """One LoCoMo conversation: its turns as a summarizer reads them, and the gold annotations."""

    sample_id: str
    turns: tuple[SourceText, ...]
    sessions: Mapping[int, tuple[SourceText, ...]]
    observations: tuple[tuple[str, tuple[str, ...]], ...]  # (fact, evidence dia_ids)
    session_summaries: Mapping[int, str]


def load_samples(path: Path) -> list[Sample]:
    text = Path(path).read_text(encoding="utf-8")
    conversations = parse_locomo(text, str(path))
    return [_sample(data, conv.messages) for data, conv in zip(json.loads(text), conversations)]


def _sample(data: Mapping[str, Any], messages: Sequence[Any]) -> Sample:
    sid = str(data["sample_id"])
    turns = tuple(
        SourceText(id=uuid5(NAMESPACE_URL, f"locomo/{sid}/{m.external_id}"), kind="message", role=m.role,
                   speaker=m.metadata.get("speaker"), text=m.text, first_seq=i, last_seq=i,
                   created_at=m.created_at, external_id=m.external_id)
        for i, m in enumerate(messages, start=1))
    sessions: dict[int, list[SourceText]] = {}
    for turn, message in zip(turns, messages):
        sessions.setdefault(int(message.metadata["session"]), []).append(turn)
    observations = []
    for facts in (data.get("observation") or {}).values():
        for speaker_facts in (facts or {}).values():
            for fact, evidence in speaker_facts:
                observations.append((str(fact), parse_evidence(evidence if isinstance(evidence, list)
                                                               else [evidence])[0]))
    summaries = {int(k.split("_")[1]): str(v) for k, v in (data.get("session_summary") or {}).items()}
    return Sample(sid, turns, {k: tuple(v) for k, v in sessions.items()}, tuple(observations), summaries)


def first_sessions(sample: Sample, count: int) -> Sample:
    """`sample` cut to its first `count` sessions: their turns and gold summaries, and the gold
    facts whose evidence turns all lie in them."""
    kept = sorted(sample.sessions)[:count]
    turns = tuple(t for n in kept for t in sample.sessions[n])
    said = {t.external_id for t in turns}
    return Sample(sample.sample_id, turns, {n: sample.sessions[n] for n in kept},
                  tuple(o for o in sample.observations if o[1] and said.issuperset(o[1])),
                  {n: text for n, text in sample.session_summaries.items() if n in kept})


def fold(turns: Sequence[SourceText], summarizer: Summarizer, *, every: int,
         max_tokens: int) -> tuple[Board, dict[str, int]]:
    """The board after all `turns`, `every` at a time, and the most items each section held."""
    board = Board.empty()
    most = {s.name: 0 for s in SECTIONS}
    for start in range(0, len(turns), every):
        board = summarizer.update_board(board, turns[start:start + every], max_tokens=max_tokens)
        for spec in SECTIONS:
            items = board.section(spec.name)
            held = max(Counter(i.group for i in items).values(), default=0) if spec.grouped_by == "kind" else len(items)
            most[spec.name] = max(most[spec.name], held)
    return board, most


def _cites(item: BoardItem, evidence: set[str]) -> bool:
    return any(s.external_id in evidence for s in item.sources)


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 over lowercase word tokens (longest common subsequence)."""
    a, b = _tokens(candidate), _tokens(reference)
    if not a or not b:
        return 0.0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    lcs = previous[-1]
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(a), lcs / len(b)
    return 2 * precision * recall / (precision + recall)


def _tokens(text: str) -> list[str]:
    return [w for w in "".join(c.lower() if c.isalnum() else " " for c in text).split()]


def lead(turns: Sequence[SourceText], max_tokens: int, counter: TokenCounter) -> str:
    """The first turns of a session, "Speaker: text", cut to `max_tokens`."""
    text = "\n".join(f"{t.who}: {t.text}" if t.who else t.text for t in turns)
    return fit(text, max_tokens, counter)


@dataclass
class Tally:
    """Counts summed over conversations."""

    items: dict[str, int] = field(default_factory=lambda: {s: 0 for s in PRECISION_SECTIONS})
    sourced: dict[str, int] = field(default_factory=lambda: {s: 0 for s in PRECISION_SECTIONS})
    observations: int = 0
    covered: int = 0
    fact_tokens: int = 0
    most: dict[str, int] = field(default_factory=lambda: {s.name: 0 for s in SECTIONS})
    rouge: list[float] = field(default_factory=list)
    rouge_lead: list[float] = field(default_factory=list)
    summary_fallbacks: int = 0


def score_sample(sample: Sample, tally: Tally, summarizer: Summarizer, counter: TokenCounter, *,
                 every: int, max_tokens: int) -> None:
    board, most = fold(sample.turns, summarizer, every=every, max_tokens=max_tokens)
    evidence = {e for _, ids in sample.observations for e in ids}
    for name in PRECISION_SECTIONS:
        items = board.section(name)
        tally.items[name] += len(items)
        tally.sourced[name] += sum(1 for i in items if _cites(i, evidence))
    cited = {s.external_id for i in board.section("key_facts") for s in i.sources}
    tally.observations += len(sample.observations)
    tally.covered += sum(1 for _, ids in sample.observations if cited & set(ids))
    tally.fact_tokens += sum(counter.count(i.text) for i in board.section("key_facts"))
    for name, held in most.items():
        tally.most[name] = max(tally.most[name], held)
    for number, gold in sorted(sample.session_summaries.items()):
        turns = sample.sessions.get(number)
        if not turns:
            continue
        draft = summarizer.summarize(turns, level=1, is_master=False, max_tokens=counter.count(gold))
        tally.summary_fallbacks += draft.fallback
        tally.rouge.append(rouge_l(draft.content, gold))
        tally.rouge_lead.append(rouge_l(lead(turns, max(draft.token_count, 1), counter), gold))


# The labelled set ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Labelled:
    """A dev utterance and what it is: preference, correction, commitment, question or none (an
    utterance of several sentences may be more than one)."""

    sample_id: str
    dia_id: str
    speaker: str
    text: str
    labels: frozenset[str]


def load_labels(path: Path) -> list[Labelled]:
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Labelled(r["sample_id"], r["dia_id"], r["speaker"], r["text"], frozenset(r["labels"])) for r in rows]


def detected(text: str) -> set[str]:
    """The detectors that fire on any sentence of an utterance."""
    found: set[str] = set()
    for sentence in split_sentences(text):
        if detect.is_constraint(sentence):
            found.add("constraints")
        if detect.is_correction(sentence):
            found.add("corrections")
        if detect.is_action(sentence):
            found.add("action_items")
        if detect.is_question(sentence):
            found.add("questions")
    return found


def score_labels(labelled: Iterable[Labelled]) -> dict[str, dict[str, float | int]]:
    """Precision and recall of each detector against the labels it should find."""
    counts = {name: {"tp": 0, "fp": 0, "fn": 0} for name in DETECTOR_LABELS}
    for row in labelled:
        fired = detected(row.text)
        for name, labels in DETECTOR_LABELS.items():
            gold = bool(row.labels & labels)
            if name in fired:
                counts[name]["tp" if gold else "fp"] += 1
            elif gold:
                counts[name]["fn"] += 1
    out: dict[str, dict[str, float | int]] = {}
    for name, c in counts.items():
        out[name] = {"precision": _share(c["tp"], c["tp"] + c["fp"]), "recall": _share(c["tp"], c["tp"] + c["fn"]),
                     "labelled": c["tp"] + c["fn"], "detected": c["tp"] + c["fp"]}
    return out


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def run_board_eval(path: Path, counter: TokenCounter, *, every: int, max_tokens: int,
                   labels: Mapping[str, Path] = LABEL_SETS, summarizer: Summarizer | None = None,
                   conversations: int | None = None, sessions: int | None = None) -> dict[str, Any]:
    """Every figure of the module docstring, as one JSON-ready dict: on the first `conversations`
    of the file and their first `sessions` sessions (all when None), with `summarizer` (the
    extractive one when None)."""
    summarizer = summarizer or ExtractiveSummarizer(counter)
    tally = Tally()
    samples = load_samples(path)[:conversations]
    if sessions is not None:
        samples = [first_sessions(sample, sessions) for sample in samples]
    for sample in samples:
        score_sample(sample, tally, summarizer, counter, every=every, max_tokens=max_tokens)
    result: dict[str, Any] = {
        "summarizer": summarizer.name,
        "conversations": len(samples),
        "sessions": sum(len(sample.sessions) for sample in samples),
        "turns": sum(len(sample.turns) for sample in samples),
        "precision": {n: _share(tally.sourced[n], tally.items[n]) for n in PRECISION_SECTIONS},
        "items": dict(tally.items),
        "fact_coverage": {"observations": tally.observations, "covered": tally.covered,
                          "share": _share(tally.covered, tally.observations),
                          "per_100_tokens": round(100 * tally.covered / tally.fact_tokens, 3) if tally.fact_tokens else 0.0,
                          "fact_tokens": tally.fact_tokens},
        "section_sizes": {s.name: {"most": tally.most[s.name], "cap": s.cap} for s in SECTIONS},
        "summaries": {"sessions": len(tally.rouge),
                      "rouge_l": round(sum(tally.rouge) / len(tally.rouge), 4) if tally.rouge else 0.0,
                      "lead_rouge_l": round(sum(tally.rouge_lead) / len(tally.rouge_lead), 4) if tally.rouge_lead else 0.0,
                      "fallbacks": tally.summary_fallbacks},
    }
    stats = getattr(summarizer, "stats", None)
    if stats is not None:
        result["llm"] = stats()
    result["labelled"] = {}
    for name, file in labels.items():
        if Path(file).is_file():
            rows = load_labels(file)
            result["labelled"][name] = {"utterances": len(rows), "detectors": score_labels(rows)}
    return result
