"""Score the learned profile against LoCoMo's gold observations, with no database.

Owns: `memctx eval profile`. Each conversation's turns are learned as the worker learns them
(`BATCH` messages at a time: the learner's candidates merged into the profile so far by
`memctx.learn.merge`, the pure rules the pipeline applies), every item citing the turns it came
from by their dia_id. The profile is then read against the authors' per-speaker observations,
which only this measure reads:

- precision: of the items about a speaker (active ones; and all, history and tombstones
  included), the share with a source turn that is the evidence of one of that speaker's gold
  observations;
- coverage: the gold observations whose evidence turn is a source of an item about their
  speaker, in total and per 100 tokens of the profile as a context shows it (`item_line`);
- the items by kind, and by the rule that made each (new, seen, replaced, …).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Sequence
from uuid import NAMESPACE_URL, uuid5

from memctx.evaluate.halves import HALVES, halves
from memctx.evaluate.locomo import parse_evidence
from memctx.learn.extract import ExtractiveLearner
from memctx.learn.merge import Draft, merge
from memctx.learn.recall import Hit, item_line
from memctx.learn.types import Learner, ProfileItem, Said
from memctx.store.ingest import parse_locomo
from memctx.tokens import TokenCounter

BATCH = 200  # as memctx.pipeline.learning learns


def speaker_observations(data: dict[str, Any]) -> dict[str, set[str]]:
    """speaker → the dia_ids that are evidence of one of their gold observations."""
    out: dict[str, set[str]] = {}
    for per_session in (data.get("observation") or {}).values():
        for speaker, facts in (per_session or {}).items():
            for _, evidence in facts or []:
                ids = parse_evidence(evidence if isinstance(evidence, list) else [evidence])[0]
                out.setdefault(str(speaker), set()).update(ids)
    return out


def observations_of(data: dict[str, Any]) -> list[tuple[str, tuple[str, ...]]]:
    """(speaker, evidence dia_ids) of each gold observation that names one."""
    out = []
    for per_session in (data.get("observation") or {}).values():
        for speaker, facts in (per_session or {}).items():
            for _, evidence in facts or []:
                ids = parse_evidence(evidence if isinstance(evidence, list) else [evidence])[0]
                if ids:
                    out.append((str(speaker), tuple(ids)))
    return out


def learn_conversation(messages: Sequence[Said], learner: Learner) -> tuple[list[ProfileItem], Counter[str]]:
    """The profile learned from `messages` as the pipeline learns it, and what each rule did."""
    items: list[ProfileItem] = []
    outcomes: Counter[str] = Counter()
    for start in range(0, len(messages), BATCH):
        batch = messages[start:start + BATCH]
        merged = merge(items, learner.learn(batch, items))
        outcomes.update(merged.counts)
        changed = {d.id: d for d in (*merged.inserted, *merged.updated)}
        items = [_item(changed.pop(i.id)) if i.id in changed else i for i in items] + \
            [_item(d) for d in changed.values()]
    return items, outcomes


def _item(d: Draft) -> ProfileItem:
    """A merged draft as the pipeline would store and read it back."""
    return ProfileItem(**{k: getattr(d, k) for k in ProfileItem.__dataclass_fields__ if k != "sources"},
                       sources=tuple(sorted(d.sources.values(), key=lambda s: s.said_at)))


def run_profile_eval(path: Path, counter: TokenCounter, learner: Learner | None = None) -> dict[str, Any]:
    """Precision and coverage of the profile learned from each LoCoMo conversation."""
    learner = learner or ExtractiveLearner()
    text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text)
    half_of = halves(str(d["sample_id"]) for d in data)
    per: dict[str, dict[str, Any]] = {}
    for sample, conv in zip(data, parse_locomo(text, str(path))):
        sid = str(sample["sample_id"])
        cid = uuid5(NAMESPACE_URL, f"locomo/{sid}")
        messages = [Said(uuid5(NAMESPACE_URL, f"locomo/{sid}/{m.external_id}"), cid, i, m.role,
                         m.metadata.get("speaker"), m.text, m.created_at, m.external_id)
                    for i, m in enumerate(conv.messages, start=1)]
        items, outcomes = learn_conversation(messages, learner)
        per[sid] = _score(items, speaker_observations(sample), observations_of(sample), counter, outcomes)
    total = _pooled(per.values())
    return {"dataset": str(path), "learner": learner.name, **total,
            "halves": {h: _pooled(v for s, v in per.items() if half_of[s] == h) for h in HALVES},
            "per_conversation": per}


def _score(items: Sequence[ProfileItem], evidence: dict[str, set[str]],
           observations: Sequence[tuple[str, tuple[str, ...]]], counter: TokenCounter,
           outcomes: Counter[str]) -> dict[str, Any]:
    def sourced(item: ProfileItem) -> bool:
        return any(s.external_id in evidence.get(item.person, set()) for s in item.sources)

    about = [i for i in items if i.person in evidence]  # items about a speaker (both are, in LoCoMo)
    active = [i for i in about if i.status == "active"]
    cited: dict[str, set[str]] = {}
    for item in active:
        cited.setdefault(item.person, set()).update(s.external_id for s in item.sources if s.external_id)
    covered = sum(1 for speaker, ids in observations if set(ids) & cited.get(speaker, set()))
    tokens = sum(counter.count(item_line(Hit(i, 0.0, None, None, None, ()))) + 1 for i in active)
    return {"items": len(active), "items_all": len(about), "precise": sum(map(sourced, active)),
            "precise_all": sum(map(sourced, about)), "observations": len(observations), "covered": covered,
            "tokens": tokens, "kinds": dict(Counter(i.kind for i in active)), "outcomes": dict(outcomes)}


def _pooled(scores: Any) -> dict[str, Any]:
    scores = list(scores)
    n = {k: sum(s[k] for s in scores) for k in ("items", "items_all", "precise", "precise_all", "observations",
                                                "covered", "tokens")}
    kinds: Counter[str] = Counter()
    for s in scores:
        kinds.update(s["kinds"])
    return {"precision": round(n["precise"] / n["items"], 4) if n["items"] else None,
            "precision_all": round(n["precise_all"] / n["items_all"], 4) if n["items_all"] else None,
            "coverage": round(n["covered"] / n["observations"], 4) if n["observations"] else None,
            "covered_per_100_tokens": round(100 * n["covered"] / n["tokens"], 2) if n["tokens"] else None,
            **n, "kinds": dict(kinds)}
