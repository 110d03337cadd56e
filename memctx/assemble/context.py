"""get_working_context: the best context per token for the user's next message.

Owns: assembling a `WorkingContext` in priority order — system prompt, external
search results (when an engine is configured: memctx.web), the user's profile (what they said
about themselves before, memctx.learn: first after the system prompt), memory search results (most relevant nearest the
query), the current context (summaries, board, recent raw turns), the user's query last —
within an exact token budget, with the sources of every item. With the feature flag off it
returns the status quo (the last N raw messages that fit) so both can run side by side.
Every call is asked at a moment (`now`, by default the present): the query's relative dates mean
the days they name then, and a context that carries memories says what day it is. Memories come
from the user's every conversation unless the options say only this one (`scope`), and one of
another conversation names it. An empty system prompt is none: a history that fits is sent as it
is, with no system message.
It never calls an LLM; it does not write anything.
"""

from __future__ import annotations

import threading
import time
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal, Mapping, Protocol, Sequence
from uuid import UUID
from weakref import WeakKeyDictionary

from psycopg_pool import ConnectionPool

from memctx.assemble.budget import MIN_MESSAGE_TOKENS, BudgetTooSmall, CachedCounter, shares
from memctx.assemble.corrections import (Correction, Statement, replaced_note, shares_slot, superseded,
                                         turn_sentences)
from memctx.assemble.current import Compressor, CurrentItems, fit_current, turn_tokens
from memctx.assemble.draft import Draft, QueryVector
from memctx.assemble.history import (History, Unstored, extractive_compressor, said_already, said_nearby, turns_said,
                                     whole_history, without_message)
from memctx.assemble.memories import Lines, MemorySection, fill_memories, more_memories
from memctx.assemble.asked import ConversationNames, Question, asked_at
from memctx.assemble.profile import EMPTY as NO_PROFILE, ProfileSection, fit_profile, settle_profile
from memctx.assemble.render import NO_LABELS, Labels, chat_turn, external_block, external_section
from memctx.assemble.repeats import keys, memories_once
from memctx.assemble.types import Cut, SectionReport, Source, WorkingContext
from memctx.frozen import frozen_new
from memctx.learn.patterns import errors_in
from memctx.learn.recall import EMPTY as NO_VIEW, ProfileOptions, ProfileReader, ProfileView, keyed, replaced_notes
from memctx.retrieve.lexical import analyze, asks_for_a_reply
from memctx.retrieve.search import MemorySearch, SearchOptions
from memctx.retrieve.types import Memory
from memctx.web import SearchReport, WebResult
from memctx.web.clean import cut
from memctx.sql import QUERIES
from memctx.store import UnknownConversation
from memctx.tokens import TokenCounter, message_tokens, messages_tokens


@dataclass(frozen=True)
class ContextOptions:
    enabled: bool = True
    status_quo_messages: int = 20
    current_share: float = 0.25
    recent_turns: int = 8
    system_prompt: str = "You are a helpful assistant. Use the conversation memory below when it is relevant."
    memory_candidates: int = 120  # memories considered when filling the memory section
    scope: Literal["conversation", "user"] = "user"  # memories of all of the user's conversations, or this one's
    external_share: float = 0.2  # of the tokens left after system prompt and query, when external search is on
    compress_at: float = 0.8  # the whole history verbatim while it (with system prompt and query) fits this share

    @classmethod
    def from_settings(cls, settings: Any) -> "ContextOptions":
        return cls(enabled=settings.context_enabled, status_quo_messages=settings.context_status_quo_messages,
                   current_share=settings.context_current_share, recent_turns=settings.context_recent_turns,
                   system_prompt=settings.context_system_prompt, external_share=settings.web_context_share,
                   compress_at=settings.compress_at, scope=settings.context_scope)


class ExternalSearch(Protocol):
    """Web search for the query (memctx.web.WebSearch): decides, searches, reports; a failure is
    in the report, never raised."""

    def external(self, query: str, *, user: UUID, people: Sequence[str], known: str,
                 memories: Sequence[str]) -> SearchReport: ...


class ContextAssembler:
    """Builds working contexts; one per app, safe to share between threads."""

    def __init__(self, pool: ConnectionPool, counter: TokenCounter, search: MemorySearch,
                 options: ContextOptions | None = None, *, external: ExternalSearch | None = None,
                 compressor: Compressor | None = None, profile: ProfileReader | None = None) -> None:
        self.pool = pool
        self.counter = CachedCounter(counter)
        self.search = search
        self.options = options or ContextOptions()
        self.external = external  # None: external search is off
        self.profile = profile  # None: no profile section, no profile keys
        self.compressor = compressor if compressor is not None else extractive_compressor(counter)
        self.names = ConversationNames(pool)

    def get_working_context(self, user: UUID, conversation: UUID, query: str, token_budget: int, *,
                            system_prompt: str | None = None, status_quo: bool | None = None,
                            search_options: SearchOptions | None = None,
                            options: ContextOptions | None = None, now: datetime | None = None,
                            stored_query: UUID | None = None) -> WorkingContext:
        """The working context for `query`, asked at `now` (by default the present; a naive time is
        UTC): the query's relative dates ("last weekend") are searched as the days they mean then,
        and a context carrying memories says what day it is. `system_prompt` None is the options'
        prompt; "" is none. `stored_query` is the id of the conversation's last message when it is
        the query itself, stored before asking: the context is then the one asked before it was
        stored (the query once, at the end; never a memory)."""
        opts = options or self.options
        started = time.perf_counter()
        asked = Question.of(self.counter, query, opts.system_prompt if system_prompt is None else system_prompt,
                            asked_at(now))
        if asked.fixed > token_budget:
            raise BudgetTooSmall(f"the system prompt and the query take {asked.fixed} tokens, over the budget of "
                                 f"{token_budget}")
        use_status_quo = (not opts.enabled) if status_quo is None else status_quo
        unstored = Unstored(stored_query, message_tokens(self.counter, "user", query)) if stored_query else None
        if use_status_quo:
            return self._status_quo(user, conversation, asked, token_budget, opts, started, unstored)
        return self._assemble(user, conversation, asked, token_budget, opts, search_options, started, unstored)

    # The memctx path ---------------------------------------------------------------------------
    def _assemble(self, user: UUID, conversation: UUID, asked: "Question", budget: int, opts: ContextOptions,
                  search_options: SearchOptions | None, started: float,
                  unstored: "Unstored | None" = None) -> WorkingContext:
        timings: dict[str, float] = {}
        ask, fixed = asked.ask, asked.fixed
        # A compressed context says what day it is, when that fits.
        dated = asked.fixed_dated <= budget
        available = budget - (asked.fixed_dated if dated else fixed)
        current_share, memory_share = shares(available, opts.current_share)
        vector = QueryVector(self.search, user, conversation if opts.scope == "conversation" else None,
                             ask["content"], asked.now)
        searching = self._start_search(user, conversation, ask, opts, memory_share, search_options, asked.now,
                                       unstored, vector)
        # Every turn is read when the whole history may fit the budget: then it is what the
        # client would have sent, the measure no context may pass.
        rows = self._current_rows(user, conversation, opts.recent_turns, history_tokens=available, unstored=unstored)
        timings["current_sql"] = _ms(started)
        history = whole_history(rows)
        history_tokens = 0 if history is None else sum(
            message_tokens(self.counter, m["role"], m["content"]) for m in history.messages)
        # the profile beside the search
        verbatim = history is not None and fixed + history_tokens <= opts.compress_at * budget
        profiling = self._start_profile(user, conversation, ask, rows, opts, vector)
        if verbatim:
            return self._verbatim(user, conversation, asked, budget, history, history_tokens, opts, searching,
                                  timings, started, profiling)
        draft = Draft(current_share, *self._fit_current(rows, opts, current_share),
                      replies=asks_for_a_reply(ask["content"]))
        memories, timings["search"] = searching.result()
        view = self._profile_view(profiling, timings)
        memories = replaced_notes(keyed(memories, view, self.profile.options), view) if self.profile else memories
        draft.labels = self.names.of(user, conversation, memories)
        if self.external is not None:
            t0 = time.perf_counter()
            self._add_external(draft, user, conversation, ask, available, opts, memories)
            timings["external"] = _ms(t0)
        draft.profile_view = view
        draft.profile = self._fit_profile(view, {t["id"].int for t in draft.items.turns}, available,
                                          available - draft.current_tokens - draft.external_tokens)
        draft.memory_budget = available - draft.current_tokens - draft.external_tokens - draft.profile.tokens
        memories, replaced = self._supersede(draft.items, memories)
        self._recall(draft, rows, opts, memories)
        self._profile_once(draft, rows, opts, memories)
        # Each thing once: the summaries and board lines leave out what the turns shown say, and
        # what a correction replaced.
        said_before = draft.current_tokens
        draft.current_messages, draft.current_tokens = self._say_once(draft.items, draft.recalled, memories,
                                                                      replaced | draft.profile_keys())
        if draft.recalled.cuts and said_before - draft.current_tokens >= FREED_TOKENS:
            # what the current context no longer says goes to the memories that were left out for
            # room, and the current context then leaves out what they say too
            draft.memory_budget += said_before - draft.current_tokens
            self._recall(draft, rows, opts, memories, resume=True)
            draft.current_messages, draft.current_tokens = self._say_once(draft.items, draft.recalled, memories,
                                                                          replaced | draft.profile_keys())
            # the turns those memories show say their items: the profile leaves them out (what that
            # frees stays unused: a memory taken now could repeat what the current context says)
            self._profile_once(draft, rows, opts, memories, refill=False)
        draft.cuts += [*draft.profile.cuts, *draft.recalled.cuts]
        head = asked.head(dated)
        messages = draft.messages(head, ask)
        total = messages_tokens(self.counter, messages)
        assert total <= budget, f"assembled {total} tokens over the budget of {budget}"
        if history is not None and total > fixed + history_tokens:
            # Never more than the status quo: the history itself is then the better context.
            return self._verbatim(user, conversation, asked, budget, history, history_tokens, opts, memories,
                                  timings, started, draft.profile_view)
        timings["total"] = _ms(started)
        return WorkingContext(mode="memctx", messages=messages, budget=budget, tokens=total,
                              sections=[self._head_section(head), *draft.sections(),
                                        self._fixed_section("query", ask)],
                              sources=draft.sources(conversation), cuts=draft.cuts, timings_ms=timings,
                              external=draft.report, today=asked.now.date() if dated else None,
                              prompt_tokens=asked.prompt_tokens)

    def _start_search(self, user: UUID, conversation: UUID, ask: dict, opts: ContextOptions, memory_share: int,
                      search_options: SearchOptions | None, now: datetime | None, unstored: "Unstored | None" = None,
                      vector: "QueryVector | None" = None
                      ) -> "Future[tuple[list[Memory], float]]":
        """The memory search, started in the background. It needs nothing of the current context:
        it runs beside the current context's query and fitting (onnxruntime, an embeddings
        endpoint and the database all release the GIL)."""
        base = search_options or self.search.options
        # Candidates scale with the memories' share: ~20 tokens per candidate turn is more than enough.
        k = min(base.k_dense, max(100, memory_share // 20))
        sopts = replace(base, limit=opts.memory_candidates, k_dense=k, k_lexical=min(base.k_lexical, k),
                        pair_rank=pair_rank(base.pair_rank, memory_share))
        return _SEARCHES.submit(self._search, user, conversation if opts.scope == "conversation" else None,
                                ask["content"], sopts, now, unstored.id if unstored else None, vector)

    def _start_profile(self, user: UUID, conversation: UUID, ask: dict, rows: Sequence[Mapping[str, Any]],
                       opts: ContextOptions, vector: "QueryVector") -> "Future[tuple[ProfileView, float]] | None":
        """The profile's part of the context, read in the background beside the search: with user
        scope all of it, ranked with the search's query vector; within one conversation's memory
        its standing instructions only, which need no vector (`ProfileReader.read`). The errors of
        the recent turns bring their procedures."""
        if self.profile is None or not self.profile.options.enabled:
            return None
        turns = sorted((r for r in rows if r["kind"] == "message"), key=lambda r: r["last_seq"])
        errors = errors_in(turns[-4:])
        return _SEARCHES.submit(self._read_profile, user, conversation if opts.scope == "conversation" else None,
                                ask["content"], vector if opts.scope == "user" else None, errors)

    def _read_profile(self, user: UUID, conversation: UUID | None, query: str, vector: "QueryVector | None",
                      errors: Sequence[tuple[str, str]]) -> tuple[ProfileView, float]:
        started = time.perf_counter()
        analysis = vector.analysis() if vector is not None else analyze(query)
        view = self.profile.read(user, query, vector() if vector is not None else None, analysis.tsquery,
                                 conversation=conversation, errors=errors)
        return view, _ms(started)

    @staticmethod
    def _profile_view(profiling: "Future[tuple[ProfileView, float]] | None", timings: dict[str, float]) -> ProfileView:
        if profiling is None:
            return NO_VIEW
        view, timings["profile"] = profiling.result()
        return view

    def _fit_profile(self, view: ProfileView, shown: set[int], available: int, room: int) -> ProfileSection:
        """The profile's lines within their share of `available` and the `room` left."""
        if self.profile is None or view is NO_VIEW:
            return NO_PROFILE
        budget = max(0, min(int(available * self.profile.options.share), self.profile.options.max_tokens, room))
        return fit_profile(view, shown, budget, self.counter, self.profile.options)

    def _profile_once(self, draft: "Draft", rows: Sequence[Mapping[str, Any]], opts: ContextOptions,
                      memories: Sequence[Memory], *, refill: bool = True) -> None:
        """The profile without the items whose turns the memories now show (`settle_profile`);
        with `refill`, what that frees goes to the memories left out for room."""
        if self.profile is None:
            return

        def shown() -> set[int]:
            return {t["id"].int for t in draft.items.turns} | {
                x.id.int for x in draft.recalled.sources if x.kind == "message"}

        def more(freed: int) -> None:
            draft.memory_budget += freed
            self._recall(draft, rows, opts, memories, resume=True)

        draft.profile = settle_profile(draft.profile, draft.profile_view, shown, more if refill else None,
                                       self.counter, self.profile.options)

    def _add_external(self, draft: "Draft", user: UUID, conversation: UUID, ask: dict, available: int,
                      opts: ContextOptions, memories: Sequence[Memory]) -> None:
        """External results, in their share first; what they leave flows to the memories."""
        budget = min(int(available * opts.external_share), available - draft.current_tokens)
        draft.report, draft.external_messages, draft.external_sources, draft.external_tokens, cuts = \
            self._search_external(user, conversation, ask, [m["content"] for m in draft.current_messages],
                                  memories, budget)
        draft.external_budget = budget
        draft.cuts += cuts

    def _recall(self, draft: "Draft", rows: Sequence[Mapping[str, Any]], opts: ContextOptions,
                memories: Sequence[Memory], resume: bool = False) -> None:
        """The memory section, filled best first with what the current context does not show.

        Shares are targets, not walls: what the current context leaves goes to the memories
        (`memory_budget`), and what the memories leave goes back to the current context before
        anything of it stays dropped. (Recent turns are never memory hits, so a wider current
        context cannot repeat a memory.) Last, each sentence once across the quoted turns.
        `resume`: the memory budget grew since the last fill, which goes on where it stopped."""
        hidden = {t["id"] for t in draft.items.turns} | said_already(memories, turns_said(draft.items.turns))
        if resume and draft.filled is not None:
            draft.recalled = more_memories(draft.filled, draft.memory_budget)
        else:
            draft.recalled = fill_memories(memories, hidden, draft.memory_budget, self.counter, replies=draft.replies,
                                           lines=draft.lines, resumable=True, labels=draft.labels)
        draft.filled = draft.recalled
        wider = draft.current_tokens + draft.memory_budget - draft.recalled.tokens
        if draft.cuts and wider > draft.current_share:
            refit = self._fit_current(rows, opts, wider, refill=True)
            if refit[3] > draft.current_tokens:
                draft.current_share, draft.memory_budget = wider, draft.recalled.tokens
                draft.items, draft.cuts, draft.current_messages, draft.current_tokens = refit
                back = {t["id"] for t in draft.items.turns}
                if back & {s.id for s in draft.recalled.sources}:  # a turn put back was a memory: once is enough
                    hidden = back | said_already(memories, turns_said(draft.items.turns))
                    draft.recalled = draft.filled = fill_memories(memories, hidden, draft.memory_budget, self.counter,
                                                                  replies=draft.replies, lines=draft.lines,
                                                                  resumable=True, labels=draft.labels)
        draft.recalled = self._memories_once(memories, draft.recalled, hidden, turns_said(draft.items.turns),
                                             draft.memory_budget, draft.replies, draft.lines, draft.labels)

    def _verbatim(self, user: UUID, conversation: UUID, asked: "Question", budget: int, history: "History",
                  history_tokens: int, opts: ContextOptions,
                  searching: "Future[tuple[list[Memory], float]] | list[Memory]", timings: dict[str, float],
                  started: float, profiling: "Future[tuple[ProfileView, float]] | ProfileView | None" = None
                  ) -> WorkingContext:
        """The whole history verbatim and in order between the system prompt and the query. In the
        room the budget leaves, only what the history cannot hold: the profile's items learned
        elsewhere (first), external results when the search fires, and with user scope memories of
        the user's other conversations, with the day it is asked on (its line is kept out of the
        room for them, and left out without them)."""
        ask, fixed = asked.ask, asked.fixed
        adding = opts.scope == "user" or self.external is not None
        if isinstance(searching, list):
            memories = searching
        elif adding:
            memories, timings["search"] = searching.result()
        else:
            searching.cancel()  # the history holds every memory of this conversation
            memories = []
        view = profiling if isinstance(profiling, ProfileView) else self._profile_view(profiling, timings)
        if self.profile is not None and not isinstance(searching, list):
            memories = replaced_notes(keyed(memories, view, self.profile.options), view)
        room = budget - fixed - history_tokens - (asked.fixed_dated - fixed if adding else 0)
        profile = self._fit_profile(view, {t["id"].int for t in history.turns}, budget - fixed, room)
        room -= profile.tokens
        report, external_messages, external_sources, external_tokens, cuts = None, [], [], 0, []
        if self.external is not None:
            t0 = time.perf_counter()
            report, external_messages, external_sources, external_tokens, cuts = self._search_external(
                user, conversation, ask, [m["content"] for m in history.messages], memories,
                min(int((budget - fixed) * opts.external_share), room))
            timings["external"] = _ms(t0)
        others = [m for m in memories if m.conversation_id != conversation and said_nearby(m)] \
            if opts.scope == "user" else []
        shown = {t["id"] for t in history.turns} | said_already(others, turns_said(history.turns))
        replies = asks_for_a_reply(ask["content"])
        lines: Lines = {}
        labels = self.names.of(user, conversation, others)
        recalled = fill_memories(others, shown, room - external_tokens, self.counter, replies=replies, lines=lines,
                                 labels=labels)
        if self.profile is not None and recalled.sources:
            # the items whose turns the memories now show say nothing new: their room to the memories

            def in_context() -> set[int]:
                return {t["id"].int for t in history.turns} | {
                    x.id.int for x in recalled.sources if x.kind == "message"}

            def more(freed: int) -> None:
                nonlocal room, recalled
                room += freed
                recalled = fill_memories(others, shown, room - external_tokens, self.counter, replies=replies,
                                         lines=lines, labels=labels)

            profile = settle_profile(profile, view, in_context, more, self.counter, self.profile.options)
        recalled = self._memories_once(others, recalled, shown, turns_said(history.turns), room - external_tokens,
                                       replies, lines, labels)
        cuts += [*profile.cuts, *recalled.cuts]
        dated = bool(external_messages or recalled.message)
        head = asked.head(dated)
        messages = [*head, *([profile.message] if profile.message else []), *external_messages,
                    *([recalled.message] if recalled.message else []), *history.messages, ask]
        total = messages_tokens(self.counter, messages)
        assert total <= budget, f"assembled {total} tokens over the budget of {budget}"
        sections = [
            self._head_section(head),
            SectionReport("profile", profile.budget, profile.tokens, len(profile.lines)),
            SectionReport("external", external_tokens, external_tokens, len(external_sources)),
            SectionReport("memories", room - external_tokens, recalled.tokens, len(recalled.sources)),
            SectionReport("current", history_tokens, history_tokens, len(history.messages)),
            self._fixed_section("query", ask),
        ]
        sources = [*profile.sources, *external_sources, *recalled.sources,
                   *(Source(kind="message", id=t["id"], section="current", external_id=t["external_id"],
                            conversation_id=conversation, seq=t["last_seq"]) for t in history.turns)]
        timings["total"] = _ms(started)
        return WorkingContext(mode="memctx", messages=messages, budget=budget, tokens=total, sections=sections,
                              sources=sources, cuts=cuts, timings_ms=timings, external=report,
                              today=asked.now.date() if dated else None, prompt_tokens=asked.prompt_tokens)

    def _memories_once(self, memories: Sequence[Memory], recalled: MemorySection, shown: set[UUID], said: set[str],
                       budget: int, replies: bool, lines: Lines, labels: Labels = NO_LABELS) -> MemorySection:
        """The memory section with each sentence of five words or more once (`memories_once`):
        the same memories, repacked (they cost no more now, so all still fit), and the same cuts."""
        once = memories_once(memories, {s.id for s in recalled.sources}, said)
        if once is None:
            return recalled
        packed = fill_memories(once, shown, budget, self.counter, replies=replies, lines=lines, report_cuts=False,
                               labels=labels)
        return replace(packed, cuts=recalled.cuts)

    def _say_once(self, items: CurrentItems, recalled: MemorySection, memories: Sequence[Memory], replaced: set[str]
                  ) -> tuple[list[dict[str, str]], int]:
        """The current context without what its turns, the memories or a correction already say
        (in place); its messages and tokens."""
        # The memories' sentences from their turns' texts (cached per turn), not from the section's
        # text, which is new on every call. Ids as the UUIDs' ints (UUID.__hash__ is Python code).
        texts = {f.id.int: f.text for m in memories for f in m.fragments} | {
            m.id.int: m.text for m in memories if m.kind != "message"}
        said = set().union(turns_said(items.turns), replaced,
                           *(keys(texts.get(s.id.int, "")) for s in recalled.sources))
        items.say_once(said, {str(t["id"]) for t in items.turns}
                       | {str(s.id) for s in recalled.sources if s.kind == "message"})
        messages = items.messages()
        return messages, sum(message_tokens(self.counter, m["role"], m["content"]) for m in messages)

    @staticmethod
    def _supersede(items: CurrentItems, memories: list[Memory]) -> tuple[list[Memory], set[str]]:
        """What the board's corrections replace: the memories with each replaced turn marked as
        such, and the sentences the summaries must leave out."""
        if not items.corrections:
            return memories, set()
        # Turns are named by their ids' ints here (the board's sources, as text, are turned into
        # ints once): str() of a UUID is Python code, and ~300 memory turns come with a search.
        corrections = [replace(c, sources=frozenset(map(_id_int, c.sources))) for c in items.corrections]
        sources = set().union(*(c.sources for c in corrections))
        fragments = [f for m in memories for f in m.fragments]
        # a correction replaces only what its person said, and a sentence sharing a slot with it
        slots: dict[str, frozenset[str]] = {}
        for c in corrections:
            slots[c.who] = slots.get(c.who, frozenset()) | c.slots
        statements = [*(frozen_new(Statement, {"who": f.who, "text": s, "turn": f.id.int, "seq": f.seq})
                        for f in fragments if f.who in slots for s in turn_sentences(f.text)
                        if shares_slot(s, slots[f.who])),
                      *items.summary_statements()]
        recent = {t["id"].int: t for t in items.turns}
        seqs = {**{f.id.int: f.seq for f in fragments if f.seq is not None and f.id.int in sources},
                **{i: t["last_seq"] for i, t in recent.items()}}
        said, replaced = superseded(corrections, statements, seqs)
        if not replaced:
            return memories, said
        times = {**{f.id.int: f.time for f in fragments if f.id.int in sources},
                 **{i: t["created_at"] for i, t in recent.items()}}

        def note(correction: Correction) -> str:
            return replaced_note(correction, min((times[s] for s in correction.sources if times.get(s)), default=None))

        return [replace(m, fragments=tuple(replace(f, text=f.text + note(replaced[f.id.int])) if f.id.int in replaced
                                           else f for f in m.fragments))
                if any(f.id.int in replaced for f in m.fragments) else m for m in memories], said

    def _fixed_section(self, name: str, message: dict[str, str]) -> SectionReport:
        tokens = message_tokens(self.counter, message["role"], message["content"])
        return SectionReport(name, tokens, tokens, 1)

    def _head_section(self, head: Sequence[dict[str, str]]) -> SectionReport:
        """The system message's section: none when there is no system message."""
        return self._fixed_section("system", head[0]) if head else SectionReport("system", 0, 0, 0)

    def _search_external(self, user: UUID, conversation: UUID, ask: dict, known: Sequence[str],
                         memories: Sequence[Memory], budget: int
                         ) -> tuple[SearchReport, list[dict[str, str]], list[Source], int, list[Cut]]:
        """The external search's report and the results of it that fit `budget`."""
        report = self.external.external(
            ask["content"], user=user, people=self.search.speakers(user, conversation),
            known="\n".join([*known, *(m.text for m in memories)]), memories=[m.text for m in memories],
            conversation=conversation)
        return (report, *self._external(report, budget))

    def _fit_current(self, rows: Sequence[Mapping[str, Any]], opts: ContextOptions, share: int, *,
                     refill: bool = False) -> tuple[CurrentItems, list[Cut], list[dict[str, str]], int]:
        """The current context fitted to `share` tokens: its items, cuts, messages and tokens."""
        items = CurrentItems.from_rows(rows, opts.recent_turns)
        cuts = fit_current(items, share, self.counter, self.compressor, refill=refill)
        messages = items.messages()
        return items, cuts, messages, sum(message_tokens(self.counter, m["role"], m["content"]) for m in messages)

    def _search(self, user: UUID, conversation: UUID | None, query: str, options: SearchOptions,
                now: datetime | None = None, without: UUID | None = None,
                vector: "QueryVector | None" = None) -> tuple[list[Memory], float]:
        """The memories for `query` (none of them the message `without`) and the milliseconds their
        search took."""
        started = time.perf_counter()
        memories = self.search.search(user, query, conversation, options=options, now=now, query_vec=vector)
        return (without_message(memories, without) if without else memories), _ms(started)

    def _current_rows(self, user: UUID, conversation: UUID, recent: int, *, history_tokens: int = 0,
                      unstored: "Unstored | None" = None) -> list[dict[str, Any]]:
        """The current context's rows: the last `recent` turns, or every turn when the whole
        history may cost at most `history_tokens` as chat messages. With `unstored`, the rows as
        they were before that last message was stored: read with room for it, then left out."""
        extra = (1, unstored.tokens) if unstored else (0, 0)
        with self.pool.connection() as conn:
            rows = conn.execute(QUERIES["current_context"], {
                "user_id": user, "conversation_id": conversation, "recent_limit": recent + extra[0],
                "history_limit": history_tokens // MIN_MESSAGE_TOKENS + extra[0],
                "history_tokens": history_tokens + extra[1]}).fetchall()
        if not any(r["kind"] == "conversation" for r in rows):
            raise UnknownConversation(conversation)
        if unstored and any(r["kind"] == "message" and r["id"] == unstored.id for r in rows):
            rows = [r if r["kind"] != "conversation" else {**r, "message_count": r["message_count"] - 1}
                    for r in rows if not (r["kind"] == "message" and r["id"] == unstored.id)]
        return rows

    def _external(self, report: SearchReport, budget: int
                  ) -> tuple[list[dict[str, str]], list[Source], int, list[Cut]]:
        """The external results that fit `budget`, best first, each cut on a sentence to the room
        left: the message, its sources, its tokens, and the results left out."""
        if not report.results:
            return [], [], 0, []
        used = message_tokens(self.counter, "system", external_section([]))
        blocks: list[tuple[WebResult, str]] = []
        left: list[WebResult] = []
        for result in report.results:
            room = budget - used - 1
            block = external_block(result, result.text)
            if self.counter.count(block) > room:
                text = cut(result.text.splitlines(), self.counter, room - self.counter.count(external_block(result, "")))
                block = external_block(result, text) if text and not text.endswith("…") else ""
            if not block or self.counter.count(block) > room:
                left.append(result)
                continue
            blocks.append((result, block))
            used += self.counter.count(block) + 1
        while blocks and message_tokens(self.counter, "system", external_section([b for _, b in blocks])) > budget:
            left.append(blocks.pop()[0])  # tokenization across joins differed: drop the last
        cuts = [Cut("dropped", "external", "external", tuple(r.url for r in left),
                    "external results beyond the external budget")] if left else []
        if not blocks:
            return [], [], 0, cuts
        message = {"role": "system", "content": external_section([b for _, b in blocks])}
        sources = [Source(kind="external", id=r.url, section="external", url=r.url, detail=r.title) for r, _ in blocks]
        return [message], sources, message_tokens(self.counter, "system", message["content"]), cuts

    # The status quo ----------------------------------------------------------------------------
    def _status_quo(self, user: UUID, conversation: UUID, asked: "Question", budget: int, opts: ContextOptions,
                    started: float, unstored: "Unstored | None" = None) -> WorkingContext:
        """The last N raw messages that fit, nothing else: the comparison arm of a side-by-side rollout."""
        ask, fixed, head = asked.ask, asked.fixed, asked.head(False)
        rows = self._current_rows(user, conversation, opts.status_quo_messages, unstored=unstored)
        turns = sorted((r for r in rows if r["kind"] == "message"), key=lambda r: r["last_seq"])
        kept: list[Mapping[str, Any]] = []
        used = fixed
        for t in reversed(turns):
            cost = turn_tokens(self.counter, t)
            if used + cost > budget:
                break
            kept.insert(0, t)
            used += cost
        messages = [*head, *(chat_turn(t["role"], t["content"]) for t in kept), ask]
        sources = [Source(kind="message", id=t["id"], section="current", external_id=t["external_id"],
                          conversation_id=conversation, seq=t["last_seq"]) for t in kept]
        cuts = [Cut("dropped", "current", "message", tuple(str(t["id"]) for t in turns[:len(turns) - len(kept)]),
                    "status quo: older messages do not fit")] if len(kept) < len(turns) else []
        total = messages_tokens(self.counter, messages)
        return WorkingContext(mode="status_quo", messages=messages, budget=budget, tokens=total,
                              sections=[SectionReport("current", budget - fixed, total - fixed, len(kept))],
                              sources=sources, cuts=cuts, timings_ms={"total": _ms(started)},
                              prompt_tokens=asked.prompt_tokens)


# Memory searches of every assembler: a call holds one thread of it while its own thread reads
# the current context. Threads start on demand; the cap is above any connection pool's size, so
# the pool, not this, limits concurrent searches.
_SEARCHES = ThreadPoolExecutor(max_workers=64, thread_name_prefix="memctx-search")


# Tokens the current context must free by saying each thing once before the memories are filled
# again with them: about a short turn's line.
FREED_TOKENS = 20

# The memories' share at which a partner turn ranked within the search's pair_rank comes along
# with its hit; below it the rank it needs shrinks in proportion.
PAIR_FULL_SHARE = 1800


def pair_rank(rank: int | None, memory_share: int) -> int | None:
    """The rank within which a partner turn comes along with its hit, for a memory section of
    `memory_share` tokens (None: always).

    A partner costs the place of the next hit. Where the section holds a few dozen memories, a
    partner that ranks well on its own is worth it; where it holds a dozen, the next hit is.
    """
    if rank is None:
        return None
    return max(1, round(rank * min(1.0, memory_share / PAIR_FULL_SHARE)))


def _id_int(text: str) -> int | str:
    """A board source's id as the int of its UUID (as turns are named in `_supersede`); the text
    itself when it names no UUID (it then matches no turn)."""
    try:
        return UUID(text).int
    except ValueError:
        return text


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)


def get_working_context(app: Any, conversation: UUID, query: str, token_budget: int, *, user: UUID | None = None,
                        system_prompt: str | None = None, status_quo: bool | None = None,
                        scope: Literal["conversation", "user"] | None = None, now: datetime | None = None,
                        options: ContextOptions | None = None,
                        search_options: SearchOptions | None = None) -> WorkingContext:
    """The working context with the app's settings (see `ContextAssembler.get_working_context`).
    A chat handler's front door is `memctx.connect(...).context(...)`, which takes the user and
    every option explicitly.

    `scope`: "user" draws memories from all of the user's conversations, "conversation" only from
    this one (None: `options`' scope, by default MEMCTX_CONTEXT_SCOPE). `now`: the moment it is
    asked, the present by default; a replay or an evaluation asks in the past. `options` and
    `search_options` replace the app's (`ContextOptions`, `SearchOptions`)."""
    from memctx.store import DEFAULT_USER

    if user is None:
        warnings.warn("get_working_context without user= reads the shared local user's conversations; pass "
                      "user= (memctx.LOCAL_USER is that user), or use memctx.connect(...).context(message, "
                      "user=..., conversation=...)", DeprecationWarning, stacklevel=2)
    assembler = assembler_for(app)
    opts = options or assembler.options
    if scope is not None:
        opts = replace(opts, scope=scope)
    return assembler.get_working_context(user or DEFAULT_USER, conversation, query, token_budget,
                                         system_prompt=system_prompt, status_quo=status_quo,
                                         search_options=search_options, options=opts, now=now)


_ASSEMBLERS: "WeakKeyDictionary[Any, ContextAssembler]" = WeakKeyDictionary()
_ASSEMBLERS_LOCK = threading.Lock()

def assembler_for(app: Any) -> ContextAssembler:
    """The app's one assembler, built on first use (it caches speaker names across calls)."""
    with _ASSEMBLERS_LOCK:
        assembler = _ASSEMBLERS.get(app)
        if assembler is None:
            assembler = _ASSEMBLERS[app] = build_assembler(app)
        return assembler


def build_assembler(app: Any) -> ContextAssembler:
    search = MemorySearch(app.pool, app.embedder, SearchOptions.from_settings(app.settings))
    web = app.web.scoped(app.pool) if app.web is not None else None  # the cache on the app's own pool
    return ContextAssembler(app.pool, app.counter, search, ContextOptions.from_settings(app.settings), external=web,
                            profile=ProfileReader(app.pool, ProfileOptions.from_settings(app.settings)))
