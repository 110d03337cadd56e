"""LoCoMo questions and the scoring rules of memctx's evaluation. Pure; no I/O but reading the file.

Owns: reading the question side of a LoCoMo file (`sample_id` and `qa` only — the authors'
`observation`, `session_summary` and `event_summary` annotations would leak answers: only the
scores read them, `retention` and `board`, never what is ingested), lenient evidence parsing,
answer normalization, and the per-question scores.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
CONTAINMENT_CATEGORIES = (1, 2, 4)  # category 3 is reported apart; 5 has no answer
# The headline pools the gold turns of these (found / all): a question with five evidence turns
# weighs five times one with one. Category 5 (adversarial) is reported beside it, never in it.
POOLED_CATEGORIES = (1, 2, 3, 4)

_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


@dataclass(frozen=True)
class Question:
    sample_id: str
    index: int
    question: str
    answer: str | None
    category: int
    evidence: tuple[str, ...]  # normalized dia_ids, e.g. "D3:11"
    unparsed: tuple[str, ...]  # evidence strings that could not be parsed


def parse_evidence(items: Iterable[Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Normalize dia_ids leniently: split on ';', strip stray colons, drop leading zeros."""
    ids: dict[str, None] = {}
    bad: list[str] = []
    for item in items or []:
        for part in str(item).split(";"):
            part = part.strip()
            if not part:
                continue
            m = _EVIDENCE.fullmatch(part.replace("::", ":"))
            if m is None:
                bad.append(part)
                continue
            ids[f"D{int(m.group(1))}:{int(m.group(2))}"] = None
    return tuple(ids), tuple(bad)


def load_questions(path: Path) -> list[Question]:
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    out: list[Question] = []
    for sample in samples:
        sid = str(sample["sample_id"])
        for i, qa in enumerate(sample.get("qa") or []):
            evidence, bad = parse_evidence(qa.get("evidence") or [])
            answer = qa.get("answer")
            out.append(Question(sample_id=sid, index=i, question=str(qa["question"]),
                                answer=None if answer is None else str(answer), category=int(qa["category"]),
                                evidence=evidence, unparsed=bad))
    return out


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans({c: " " for c in string.punctuation})


def normalize(text: str) -> str:
    """Lower case, punctuation and articles removed, whitespace collapsed (SQuAD-style)."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split())


def contains_answer(context: str, answer: str | None) -> bool | None:
    """Whether the normalized answer occurs in the normalized context (None: no answer)."""
    if answer is None:
        return None
    gold = normalize(answer)
    if not gold:
        return None
    return f" {gold} " in f" {normalize(context)} "


def evidence_found(context: str, evidence: Iterable[str], texts: Mapping[str, str]) -> tuple[int, int] | None:
    """(gold turns whose stored text appears verbatim in the context, gold turns stored); None
    when no evidence id names a stored turn (the question is skipped)."""
    known = [e for e in evidence if e in texts]
    if not known:
        return None
    return sum(1 for e in known if texts[e] in context), len(known)


def evidence_recall(context: str, evidence: Iterable[str], texts: Mapping[str, str]) -> float | None:
    """Share of one question's gold turns in the context (None: skipped)."""
    found = evidence_found(context, evidence, texts)
    return None if found is None else found[0] / found[1]
