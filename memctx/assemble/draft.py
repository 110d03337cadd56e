"""A compressed context between the steps of `ContextAssembler._assemble`, and the query's
vector shared by the memory search and the profile beside it."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Sequence
from uuid import UUID

from memctx.assemble.current import CurrentItems
from memctx.assemble.memories import Lines, MemorySection
from memctx.assemble.profile import EMPTY as NO_PROFILE, ProfileSection
from memctx.assemble.render import Labels
from memctx.assemble.repeats import keys
from memctx.assemble.types import Cut, SectionReport, Source
from memctx.learn.recall import EMPTY as NO_VIEW, ProfileView
from memctx.retrieve.lexical import analyze
from memctx.retrieve.search import MemorySearch
from memctx.web import SearchReport


@dataclass
class Draft:
    """A compressed context between the steps of `ContextAssembler._assemble`."""

    current_share: int
    items: CurrentItems
    cuts: list[Cut]
    current_messages: list[dict[str, str]]
    current_tokens: int
    memory_budget: int = 0
    recalled: MemorySection = MemorySection(None, [], 0, [])
    external_budget: int = 0
    report: SearchReport | None = None
    external_messages: list[dict[str, str]] = field(default_factory=list)
    external_sources: list[Source] = field(default_factory=list)
    external_tokens: int = 0
    replies: bool = False  # the query asks what the assistant said (memories weigh its replies as lines)
    lines: Lines = field(default_factory=dict)  # the memory turns' lines, shared by this context's fills
    labels: Labels = field(default_factory=dict)  # the memories' other conversations, named
    filled: MemorySection | None = None  # the last fill of the memories, before each sentence once: to resume
    profile: ProfileSection = NO_PROFILE
    profile_view: ProfileView = NO_VIEW

    def messages(self, head: Sequence[dict[str, str]], ask: dict) -> list[dict[str, str]]:
        memory = [self.recalled.message] if self.recalled.message else []
        profile = [self.profile.message] if self.profile.message else []
        return [*head, *profile, *self.external_messages, *memory, *self.current_messages, ask]

    def sections(self) -> list[SectionReport]:
        return [SectionReport("profile", self.profile.budget, self.profile.tokens, len(self.profile.lines)),
                SectionReport("external", self.external_budget, self.external_tokens, len(self.external_sources)),
                SectionReport("memories", self.memory_budget, self.recalled.tokens, len(self.recalled.sources)),
                SectionReport("current", self.current_share, self.current_tokens, len(self.current_messages))]

    def sources(self, conversation: UUID) -> list[Source]:
        return self.profile.sources + self.external_sources + self.recalled.sources + self.items.sources(conversation)

    def profile_keys(self) -> set[str]:
        """The sentences the profile says: the summaries and board lines leave them out."""
        return set(keys(self.profile.message["content"])) if self.profile.message else set()


class QueryVector:
    """The query's vector, made once for the memory search and the profile beside it (whichever
    asks first makes it; the other waits): the query as memory search analyzes it, its named
    speakers in the first person (`memctx.retrieve.lexical.analyze`)."""

    def __init__(self, search: MemorySearch, user: UUID, conversation: UUID | None, query: str,
                 now: datetime | None) -> None:
        self._args = (search, user, conversation, query, now)
        self._lock = threading.Lock()
        self._analysis: Any = None
        self._vector: Any = None

    def analysis(self) -> Any:
        with self._lock:
            if self._analysis is None:
                search, user, conversation, query, now = self._args
                self._analysis = analyze(query, search.speakers(user, conversation), now.date() if now else None)
            return self._analysis

    def __call__(self) -> Any:
        analysis = self.analysis()
        with self._lock:
            if self._vector is None:
                self._vector = self._args[0].embed_query(analysis.dense_text)
            return self._vector
