"""Weighted reciprocal-rank fusion of candidate lists.

Owns: the fused score of a candidate from its ranks in the lists of the retrieval signals
(`memctx.retrieve.signals`: dense, full text, recency; score = Σ wᵢ / (k + rankᵢ), Cormack et al.
2009, one weight per signal) and the small bonuses memctx adds on top. Pure; the ranks come from `memctx/sql/retrieve.sql`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from memctx.retrieve.signals import SIGNALS


@dataclass(frozen=True)
class FusionWeights:
    """Per-list weights (one per retrieval signal) and the RRF constant k."""

    by_signal: Mapping[str, float] = field(default_factory=lambda: {s.name: s.untuned_weight for s in SIGNALS})
    k: float = 60.0

    @classmethod
    def of(cls, k: float = 60.0, **weights: float) -> "FusionWeights":
        """Weights by signal name; a signal left out keeps its seed weight."""
        unknown = set(weights) - {s.name for s in SIGNALS}
        if unknown:
            raise ValueError(f"unknown retrieval signal(s): {', '.join(sorted(unknown))}")
        return cls({s.name: float(weights.get(s.name, s.untuned_weight)) for s in SIGNALS}, k)

    def __post_init__(self) -> None:
        if min(self.by_signal.values(), default=0) < 0:
            raise ValueError("fusion weights must not be negative")
        if self.k <= 0:
            raise ValueError("the RRF constant k must be positive")


def rrf(ranks: Mapping[str, int | None], weights: FusionWeights) -> float:
    """Weighted RRF of one candidate; `ranks` maps list name → 1-based rank (None = absent)."""
    score = 0.0
    for name, rank in ranks.items():
        if rank is not None:
            score += weights.by_signal[name] / (weights.k + rank)
    return score


def fuse(candidates: dict[object, dict[str, int | None]], weights: FusionWeights) -> list[tuple[object, float]]:
    """Candidates ordered by fused score (best first); ties keep the input order."""
    scored = [(key, rrf(ranks, weights)) for key, ranks in candidates.items()]
    return sorted(scored, key=lambda item: -item[1])
