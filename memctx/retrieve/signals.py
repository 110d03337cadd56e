"""The retrieval signals: the one list that drives the fusion weights, the ranks read from the
search queries' rows, the provenance with its JSON, and the settings that weigh them.

Adding a signal means: its candidate CTE and rank column in `memctx/sql/retrieve.sql`, one entry
here, and its weight `search_weight_<name>` in `Settings`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class Signal:
    name: str  # the candidate list's name: its weight and its entry in provenance's matched_by
    rank_column: str  # the search queries' column with a candidate's 1-based rank in that list
    seed_weight: float  # seed 004's weight; Settings holds the tuned one

    @property
    def setting(self) -> str:
        return f"search_weight_{self.name}"


SIGNALS = (
    Signal("dense", "dense_rank", 0.5),
    Signal("lexical", "lexical_rank", 0.3),
    Signal("recency", "recent_rank", 0.2),
)


def ranks_of(row: Mapping[str, Any]) -> dict[str, int | None]:
    """A candidate row's rank in each list (None = not in that list)."""
    return {s.name: row.get(s.rank_column) for s in SIGNALS}
