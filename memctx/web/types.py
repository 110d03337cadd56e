"""What external search passes around: engine hits, fetched pages, decisions, reports.

Owns: the frozen result types and their JSON form. No logic, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

DecidedBy = Literal["keyword", "memory", "slm"]


class SearchFailed(RuntimeError):
    """Every configured engine failed (or none is configured)."""


@dataclass(frozen=True)
class Hit:
    """One engine result, before its page is fetched."""

    title: str
    url: str
    snippet: str = ""

    def as_json(self) -> dict[str, str]:
        return {"title": self.title, "url": self.url, "snippet": self.snippet}


@dataclass(frozen=True)
class WebResult:
    """A hit with the cleaned text of its page (the snippet when the page could not be used)."""

    title: str
    url: str
    text: str
    fetched: bool  # False: `text` is the engine's snippet (the fetch was refused or failed)
    note: str = ""  # why the page was not used, if it was not

    def as_json(self) -> dict[str, Any]:
        return {"title": self.title, "url": self.url, "text": self.text, "fetched": self.fetched, "note": self.note}

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> "WebResult":
        return cls(title=row["title"], url=row["url"], text=row["text"], fetched=row["fetched"],
                   note=row.get("note", ""))


@dataclass(frozen=True)
class Decision:
    """Whether a query goes to the web, and why (every rule that fired, with its weight)."""

    search: bool
    reason: str
    by: DecidedBy
    score: float = 0.0
    rules: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()  # named things of the query (what a memory hit must cover)

    def as_json(self) -> dict[str, Any]:
        return {"search": self.search, "reason": self.reason, "by": self.by, "score": self.score,
                "rules": list(self.rules), "entities": list(self.entities)}


@dataclass(frozen=True)
class SearchReport:
    """One external search as the context reports it: the decision, what left, what came back."""

    decision: Decision
    query: str | None = None  # the anonymized query sent (None: nothing was sent)
    engine: str | None = None
    cached: bool = False
    results: tuple[WebResult, ...] = ()
    errors: tuple[str, ...] = ()  # engines that failed, and how; a fetch that failed
    ms: dict[str, float] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.decision.search and self.engine is None

    def as_json(self) -> dict[str, Any]:
        return {"decision": self.decision.as_json(), "query": self.query, "engine": self.engine,
                "cached": self.cached, "results": [r.as_json() for r in self.results], "errors": list(self.errors),
                "failed": self.failed, "timings_ms": self.ms}
