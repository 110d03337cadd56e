"""Weighted reciprocal-rank fusion of candidate lists.

Owns: the fused score of a candidate from its ranks in the dense, full-text and recency lists
(score = Σ wᵢ / (k + rankᵢ), Cormack et al. 2009, with per-list weights) and the small bonuses
memctx adds on top. Pure; the ranks come from `memctx/sql/retrieve.sql`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FusionWeights:
    """Per-list weights and the RRF constant. Seed 004's defaults: 0.5 / 0.3 / 0.2, k = 60."""

    dense: float = 0.5
    lexical: float = 0.3
    recency: float = 0.2
    k: float = 60.0

    def __post_init__(self) -> None:
        if min(self.dense, self.lexical, self.recency) < 0:
            raise ValueError("fusion weights must not be negative")
        if self.k <= 0:
            raise ValueError("the RRF constant k must be positive")


def rrf(ranks: dict[str, int | None], weights: FusionWeights) -> float:
    """Weighted RRF of one candidate; `ranks` maps list name → 1-based rank (None = absent)."""
    score = 0.0
    for name, rank in ranks.items():
        if rank is not None:
            score += getattr(weights, name) / (weights.k + rank)
    return score


def fuse(candidates: dict[object, dict[str, int | None]], weights: FusionWeights) -> list[tuple[object, float]]:
    """Candidates ordered by fused score (best first); ties keep the input order."""
    scored = [(key, rrf(ranks, weights)) for key, ranks in candidates.items()]
    return sorted(scored, key=lambda item: -item[1])
