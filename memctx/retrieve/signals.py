"""The retrieval signals: the one list that drives the search queries' rank columns, the ranks
read from their rows, the provenance with its JSON, the fusion weights and the settings that
weigh them.

Adding a signal means: its candidate CTE (columns id, conversation_id, seq, rank) in both search
queries of `memctx/sql/retrieve.sql`, one entry here, and its weight `search_weight_<name>` in
`Settings`.
`memctx.retrieve.queries` generates the rest of the SQL (the hits' rank columns) from this list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class Signal:
    name: str  # the candidate list's name: its weight and its entry in provenance's matched_by
    cte: str  # the search queries' CTE of the list's candidates: (id, conversation_id, seq, 1-based rank)
    untuned_weight: float  # the list's weight where none is given (a plain RRF's); Settings holds the tuned one
    # A relevance list (what the query is about, not when): search_user ranks summaries on it too
    # (summary_ranked.<rank_column>), and a partner turn ranked on it is worth pairing.
    relevance: bool = False

    @property
    def rank_column(self) -> str:
        """The search queries' column with a candidate's rank in this list; provenance's JSON key."""
        return f"{self.cte}_rank"

    @property
    def setting(self) -> str:
        return f"search_weight_{self.name}"


SIGNALS = (
    Signal("dense", "dense", 0.5, relevance=True),
    Signal("lexical", "lexical", 0.3, relevance=True),
    Signal("recency", "recent", 0.2),
)


# (name, rank column) of every signal, and the rank columns of the relevance lists: read for
# every candidate row of every search.
_RANK_COLUMNS = tuple((s.name, s.rank_column) for s in SIGNALS)
_RELEVANCE_COLUMNS = tuple(s.rank_column for s in SIGNALS if s.relevance)


def ranks_of(row: Mapping[str, Any]) -> dict[str, int | None]:
    """A candidate row's rank in each list (None = not in that list)."""
    return {name: row.get(column) for name, column in _RANK_COLUMNS}


def best_relevance_rank(row: Mapping[str, Any]) -> int | None:
    """A row's best rank in the relevance lists (None = in none of them)."""
    return min((r for r in map(row.get, _RELEVANCE_COLUMNS) if r is not None), default=None)
