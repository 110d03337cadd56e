"""What the query model must keep: the dense ranking of stored turns for a question.

Shared by the embedder's unit tests and its emulated-CPU test: the questions and turns of the
first synthetic LoCoMo conversation (tests/fixtures/locomo-mini.json), and how two sets of query
vectors compare when each ranks the same stored turns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

LOCOMO_MINI = Path(__file__).resolve().parent / "fixtures" / "locomo-mini.json"


@dataclass(frozen=True)
class Corpus:
    turn_ids: list[str]
    turns: list[str]
    questions: list[str]
    evidence: list[list[int]]  # per question, the positions of its evidence turns


def mini_corpus() -> Corpus:
    sample = json.loads(LOCOMO_MINI.read_text())[0]
    ids, turns = [], []
    for key, session in sample["conversation"].items():
        if key.startswith("session_") and isinstance(session, list):
            for turn in session:
                ids.append(turn["dia_id"])
                turns.append(turn["text"])
    position = {turn_id: i for i, turn_id in enumerate(ids)}
    asked = [qa for qa in sample["qa"] if any(e in position for e in qa.get("evidence", []))]
    return Corpus(ids, turns, [qa["question"] for qa in asked],
                  [[position[e] for e in qa["evidence"] if e in position] for qa in asked])


@dataclass(frozen=True)
class RankingAgreement:
    overlap: float  # mean share of one top-k the other top-k holds
    evidence_found: tuple[int, int]  # evidence turns in the top-k: with the queries tried, with the reference
    evidence_total: int


def compare_rankings(corpus: Corpus, stored: np.ndarray, queries: np.ndarray, reference: np.ndarray,
                     k: int = 10) -> RankingAgreement:
    """The top-k stored turns by cosine, for `queries` against `reference` query vectors."""
    overlap, found, found_ref, total = [], 0, 0, 0
    for question, evidence in enumerate(corpus.evidence):
        top = set(np.argsort(-(stored @ queries[question]))[:k].tolist())
        top_ref = set(np.argsort(-(stored @ reference[question]))[:k].tolist())
        overlap.append(len(top & top_ref) / k)
        found += len(top & set(evidence))
        found_ref += len(top_ref & set(evidence))
        total += len(evidence)
    return RankingAgreement(float(np.mean(overlap)), (found, found_ref), total)


def keeps_retrieval(agreement: RankingAgreement) -> bool:
    """Retrieval as the float queries give it, with room for a kernel's rounding: nine of ten
    turns of a top-10 the same on average, and evidence found within 3 % of the stored turns'
    evidence (a broken model keeps neither: unrelated vectors share ~0 of a top-10)."""
    found, found_ref = agreement.evidence_found
    return agreement.overlap >= 0.9 and found >= found_ref - 0.03 * agreement.evidence_total
