"""The current-context section: master and live summaries, board facts and constraints, recent
raw turns — fitted to its share of the budget.

Owns: reading the `current_context` rows into items, compressing the older half of the raw
turns when the section passes 80 % of its share, and dropping the lowest-priority
items until it fits. It reports every cut.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from memctx.assemble.corrections import Correction, Statement, corrections_of, summary_statements
from memctx.assemble.render import chat_turn, current_section
from memctx.assemble.repeats import strip_said
from memctx.assemble.types import Cut, Source
from memctx.summarize.types import BoardItem
from memctx.tokens import TokenCounter, message_tokens

COMPRESS_AT = 0.8

# Compresses raw turns (oldest first) into at most max_tokens of text; None = cannot.
Compressor = Callable[[Sequence[Mapping[str, Any]], int], str | None]


def _texts(items: Any) -> list[str]:
    """The lines of a stored board section (items, or strings from older boards: BoardItem reads
    both), without parsing the items' sources, which the context does not show."""
    return [t for t in map(BoardItem.text_of, items or []) if t is not None]


def _source_ids(items: Any) -> dict[str, frozenset[str]]:
    """Each board line's source message ids, as text (the ids are only compared with the ids of
    the turns in the context; a line without sources maps to an empty set)."""
    out: dict[str, frozenset[str]] = {}
    for item in items or []:
        text = BoardItem.text_of(item)
        if text is not None and isinstance(item, Mapping) and isinstance(item.get("sources"), list):
            out[text] = frozenset(str(s["id"]) for s in item["sources"] if isinstance(s, Mapping) and s.get("id"))
    return out


@dataclass
class CurrentItems:
    """The candidate items of the current context, mutable while fitting."""

    master: Mapping[str, Any] | None = None
    summaries: list[Mapping[str, Any]] = field(default_factory=list)  # live, non-master, by first_seq
    board: Mapping[str, Any] | None = None
    facts: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    turns: list[Mapping[str, Any]] = field(default_factory=list)  # oldest first
    item_sources: dict[str, frozenset[str]] = field(default_factory=dict)  # board line → its source message ids
    corrections: list[Correction] = field(default_factory=list)  # the board's constraints that correct
    compressed: str | None = None
    compressed_ids: tuple[str, ...] = ()
    compressed_range: tuple[int, int] = (0, 0)

    @classmethod
    def from_rows(cls, rows: Sequence[Mapping[str, Any]], recent_turns: int) -> "CurrentItems":
        items = cls()
        live = [r for r in rows if r["kind"] == "summary"]
        masters = [r for r in live if r["is_master"]]
        items.master = max(masters, key=lambda r: r["last_seq"]) if masters else None
        items.summaries = sorted((r for r in live if not r["is_master"]), key=lambda r: (r["first_seq"], r["level"]))
        boards = [r for r in rows if r["kind"] == "board"]
        if boards:
            items.board = boards[0]
            extra = boards[0]["board"] or {}
            items.facts = _texts(extra.get("key_facts"))
            items.constraints = _texts(extra.get("constraints"))
            items.item_sources = {**_source_ids(extra.get("key_facts")), **_source_ids(extra.get("constraints"))}
            items.corrections = corrections_of(extra.get("constraints"))
        turns = sorted((r for r in rows if r["kind"] == "message"), key=lambda r: r["last_seq"])
        items.turns = turns[-recent_turns:] if recent_turns else []
        return items

    def say_once(self, said: set[str], shown: set[str]) -> None:
        """Leave out what the context already says: a board line whose source turns are all in it
        (`shown`: the ids of its turns) and its sentences that `said` holds, then every sentence of the
        summaries and compressed turns that `said` holds or an earlier one of them says (the
        master first, then the running summary, the level summaries, the compressed turns). The
        raw turns stay as they are: `said` should hold theirs already. Only ever shortens."""
        def new(line: str) -> str:
            sources = self.item_sources.get(line)
            return "" if sources and sources <= shown else strip_said(line, said)

        self.constraints = [c for c in map(new, self.constraints) if c]
        self.facts = [f for f in map(new, self.facts) if f]
        if self.master:
            master = strip_said(self.master["content"] or "", said)
            self.master = {**self.master, "content": master} if master else None
        if self.board and self.board["content"]:
            self.board = {**self.board, "content": strip_said(self.board["content"], said)}
        self.summaries = [s for s in ({**s, "content": strip_said(s["content"], said)} for s in self.summaries)
                          if s["content"]]
        if self.compressed:
            self.compressed = strip_said(self.compressed, said) or None

    def summary_statements(self) -> list[Statement]:
        """The sentences of the master, running summary, level summaries and compressed turns."""
        texts = [self.master["content"] if self.master else "", self.board["content"] if self.board else "",
                 *(s["content"] for s in self.summaries), self.compressed or ""]
        return [st for text in texts if text for st in summary_statements(text)]

    def messages(self) -> list[dict[str, str]]:
        text = current_section(
            self.master["content"] if self.master else None, [s["content"] for s in self.summaries],
            self.board["content"] if self.board else None, self.facts, self.constraints, self.compressed)
        out = [{"role": "system", "content": text}] if text else []
        return out + [chat_turn(t["role"], t["content"]) for t in self.turns]

    def cost(self, counter: TokenCounter) -> int:
        """Exact tokens of the section's messages."""
        return sum(message_tokens(counter, m["role"], m["content"]) for m in self.messages())

    def estimate(self, counter: TokenCounter) -> int:
        """Tokens as the sum of each line's (cached) count: cheap, and within a few tokens of
        `cost` (tokenization across line joins differs slightly). Each item adds its own part
        (`_line_estimate`, `message_tokens`), which `_drop_lowest` returns when it drops it."""
        lines = [self.master["content"] if self.master else "", self.board["content"] if self.board else "",
                 self.compressed or "", *(s["content"] for s in self.summaries), *self.facts, *self.constraints]
        text_tokens = sum(_line_estimate(counter, line) for line in lines) + 16  # headers
        return text_tokens + sum(turn_tokens(counter, t) for t in self.turns)

    def sources(self, conversation: UUID) -> list[Source]:
        out: list[Source] = []
        if self.master:
            out.append(_summary_source(self.master, conversation, "master"))
        out += [_summary_source(s, conversation, f"level {s['level']}") for s in self.summaries]
        if self.board and (self.board["content"] or self.facts or self.constraints):
            out.append(Source(kind="board", id=str(conversation), section="current", conversation_id=conversation,
                              last_seq=self.board["last_seq"], detail="board"))
        if self.compressed:
            out.append(Source(kind="summary", id="compressed", section="current", conversation_id=conversation,
                              first_seq=self.compressed_range[0], last_seq=self.compressed_range[1],
                              detail="compressed"))
        out += [Source(kind="message", id=t["id"], section="current", external_id=t["external_id"],
                       conversation_id=conversation, seq=t["last_seq"]) for t in self.turns]
        return out


def turn_tokens(counter: TokenCounter, turn: Mapping[str, Any]) -> int:
    """A stored turn's tokens as the chat message the context shows (`chat_turn`)."""
    message = chat_turn(turn["role"], turn["content"])
    return message_tokens(counter, message["role"], message["content"])


def _line_estimate(counter: TokenCounter, line: str) -> int:
    """A line's part of `CurrentItems.estimate`: its tokens and two for its bullet and line end."""
    return counter.count(line) + 2 if line else 0


def _summary_source(row: Mapping[str, Any], conversation: UUID, detail: str) -> Source:
    return Source(kind="summary", id=row["id"], section="current", conversation_id=conversation,
                  first_seq=row["first_seq"], last_seq=row["last_seq"], detail=detail)


def fit_current(items: CurrentItems, share: int, counter: TokenCounter, compress: Compressor | None, *,
                refill: bool = False) -> list[Cut]:
    """Fit `items` into `share` tokens in place; returns what was compressed or dropped. With
    `refill`, what was dropped early but fits once larger items are gone is put back (the room is
    the current context's to use up: the memories have already taken theirs)."""
    cuts: list[Cut] = []
    cost = items.cost(counter)
    if cost > COMPRESS_AT * share and len(items.turns) >= 2 and compress is not None:
        cuts += _compress_older_half(items, share, counter, compress)
        cost = items.cost(counter)
    summaries, facts = list(items.summaries), list(items.facts)
    while cost > share:
        # The estimate less each dropped item's part: recounting every line after each drop was
        # quadratic in the board's facts (~1,700 counts per call on LoCoMo).
        estimate = items.estimate(counter)
        while estimate > share and (dropped := _drop_lowest(items, counter)) is not None:
            cuts.append(dropped[0])
            estimate -= dropped[1]
        cost = items.cost(counter)
        if cost > share:  # the estimate was a little low: drop one more, exactly
            dropped = _drop_lowest(items, counter)
            if dropped is None:
                break
            cuts.append(dropped[0])
            cost = items.cost(counter)
    return merge_cuts(_refill(items, summaries, facts, share, counter, cuts) if refill else cuts)


def _refill(items: CurrentItems, summaries: list[Mapping[str, Any]], facts: list[str], share: int,
            counter: TokenCounter, cuts: list[Cut]) -> list[Cut]:
    """Put back what was dropped early but fits now that larger items are gone (level summaries
    newest first, then key facts in order); returns the cuts without them."""
    for s in sorted((s for s in summaries if s not in items.summaries), key=lambda s: -s["first_seq"]):
        items.summaries = sorted([*items.summaries, s], key=lambda r: (r["first_seq"], r["level"]))
        if items.cost(counter) > share:
            items.summaries.remove(s)
            continue
        cuts = [c for c in cuts if not (c.kind == "summary" and c.ids == (str(s["id"]),))]
    while len(items.facts) < len(facts):
        items.facts.append(facts[len(items.facts)])
        if items.cost(counter) > share:
            items.facts.pop()
            break
        last = max(i for i, c in enumerate(cuts) if c.ids == ("key_facts",))  # the fact dropped first
        cuts = cuts[:last] + cuts[last + 1:]
    return cuts


def merge_cuts(cuts: Sequence[Cut]) -> list[Cut]:
    """One report line per run of same-kind drops (forty key facts are one cut, not forty)."""
    out: list[Cut] = []
    for cut in cuts:
        last = out[-1] if out else None
        if last and (last.action, last.kind, last.reason) == (cut.action, cut.kind, cut.reason):
            ids = last.ids + tuple(i for i in cut.ids if i not in last.ids)
            out[-1] = Cut(last.action, last.section, last.kind, ids, last.reason, last.tokens + cut.tokens)
        else:
            out.append(cut)
    return out


def _compress_older_half(items: CurrentItems, share: int, counter: TokenCounter, compress: Compressor) -> list[Cut]:
    half = len(items.turns) // 2
    older, items.turns = items.turns[:half], items.turns[half:]
    older_tokens = sum(turn_tokens(counter, t) for t in older)
    text = compress(older, max(16, min(older_tokens // 2, share // 4)))
    ids = tuple(str(t["id"]) for t in older)
    if not text:
        return [Cut("dropped", "current", "message", ids, "older half of the recent turns; nothing to compress into",
                    older_tokens)]
    items.compressed, items.compressed_ids = text, ids
    items.compressed_range = (older[0]["last_seq"], older[-1]["last_seq"])
    return [Cut("compressed", "current", "message", ids,
                f"current context passed {int(COMPRESS_AT * 100)} % of its share: older half of the raw turns "
                "summarized", older_tokens - counter.count(text))]


KEEP_LAST_TURNS = 2


def _drop_lowest(items: CurrentItems, counter: TokenCounter) -> tuple[Cut, int] | None:
    """Drop the lowest-priority item: its cut, and the tokens it added to `items.estimate`.
    Priority, lowest first: level summaries (oldest first), key facts (newest first), the
    compressed turns, the board's running summary, raw turns (oldest first) but the last two, the
    master summary, constraints, the last two turns."""
    if items.summaries:
        s = items.summaries.pop(0)
        return (Cut("dropped", "current", "summary", (str(s["id"]),), "summary over the current-context share",
                    int(s["token_count"] or counter.count(s["content"]))), _line_estimate(counter, s["content"]))
    if items.facts:
        fact = items.facts.pop()
        return (Cut("dropped", "current", "board", ("key_facts",), "key facts over the share", counter.count(fact)),
                _line_estimate(counter, fact))
    if items.compressed:
        text, items.compressed = items.compressed, None
        return (Cut("dropped", "current", "summary", items.compressed_ids, "compressed turns over the share",
                    counter.count(text)), _line_estimate(counter, text))
    if items.board and items.board["content"]:
        board = dict(items.board)
        tokens = counter.count(board["content"])
        board["content"] = ""
        items.board = board
        return (Cut("dropped", "current", "board", ("current_summary",), "board summary over the share", tokens),
                tokens + 2)
    if len(items.turns) > KEEP_LAST_TURNS:
        return _drop_turn(items, counter)
    if items.master:
        m, items.master = items.master, None
        return (Cut("dropped", "current", "summary", (str(m["id"]),), "master summary over the share",
                    counter.count(m["content"])), _line_estimate(counter, m["content"]))
    if items.constraints:
        c = items.constraints.pop()
        return (Cut("dropped", "current", "board", ("constraints",), "constraints over the share", counter.count(c)),
                _line_estimate(counter, c))
    if items.turns:
        return _drop_turn(items, counter)
    return None


def _drop_turn(items: CurrentItems, counter: TokenCounter) -> tuple[Cut, int]:
    t = items.turns.pop(0)
    tokens = turn_tokens(counter, t)
    return Cut("dropped", "current", "message", (str(t["id"]),), "oldest recent turns over the share", tokens), tokens
