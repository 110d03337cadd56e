"""The memory section: search hits packed best first under their share of the budget.

Owns: choosing which memories fit, with each session's header counted once however many of its
turns are shown, and the sources and cuts of the section. Tokens are the currency, line by line:
a memory is taken by its search score per line of `LINE_TOKENS` its longest turn costs (`worth`),
so a 400-token reply must score four times as high as a 100-token turn to take the room of four
of them, and a long turn that comes along with a hit (its partner) must pay for itself too. A long
message with passages (memctx.pipeline.passages) can come as its relevant passage, an excerpt
that cites the message, at the passage's cost, where the whole message does not fit. The text is
memctx.assemble.render's; this module never cuts a turn itself.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any, Collection, Sequence
from uuid import UUID

from memctx.assemble.render import (GAP, NO_LABELS, Labels, Line, gap_between, memory_groups, memory_header,
                                    memory_section, session_header, session_key, summary_line, turn_line)
from memctx.assemble.types import Cut, Source
from memctx.frozen import frozen_new
from memctx.retrieve.types import Fragment, Memory
from memctx.tokens import TokenCounter, message_tokens

ROLE = "system"

# What a line may cost before it must earn more: a memory whose longest turn is longer is worth
# its score divided by that turn's length in lines of this many tokens, and is also offered
# without its long partner turns. Short turns (LoCoMo's, at most ~100 tokens, median ~30) are
# never touched; a chat assistant's replies (LongMemEval's, median ~350 tokens) are.
LINE_TOKENS = 100


_TOKENS = attrgetter("token_count")
_RANK = itemgetter(0, 1)  # an offer's order: best worth first, then as offered

# The turns' lines of one context, shared by its fills: id(fragment) → (line, its tokens with
# its newline, session key, the fragment). A context's fills offer the same fragments (the
# memories of one search, and the same turns re-cut by `memories_once`), each costed once.
Lines = dict[int, tuple[str, int, tuple[Any, ...], Fragment]]


def _sides(memory: Memory) -> tuple[list[Fragment], list[Fragment], list[Fragment], Fragment | None]:
    """The ways a memory may be shown at less than its whole: its companions (its hit and each
    turn at most a line long), its turns shorter than its hit (the cheaper side of the exchange),
    and the memory excerpted (each turn whole when it is at most a line long, otherwise as its
    relevant passage, an excerpt, when it has one, otherwise left out, the hit excepted: it stays
    whole); and its hit (None: not among its turns)."""
    companions: list[Fragment] = []
    excerpted: list[Fragment] = []
    hit = None
    for f in memory.fragments:
        is_hit = f.id == memory.id
        if is_hit and hit is None:
            hit = f
        if f.token_count <= LINE_TOKENS:
            companions.append(f)
            excerpted.append(f)
        else:
            if is_hit:
                companions.append(f)
            if f.passage is not None:
                excerpted.append(f.excerpt())
            elif is_hit:
                excerpted.append(f)
    cheaper = [] if hit is None else [f for f in memory.fragments
                                      if f.id != memory.id and f.token_count < hit.token_count]
    return companions, cheaper, excerpted, hit


def worth(memory: Memory, fragments: Sequence[Fragment], replies: bool = False) -> float:
    """The memory's search score per line its longest turn costs, in lines of LINE_TOKENS (at
    least one): turns of up to a line are taken by score as they rank, a 400-token turn must
    score four times as high as a line to come before it. An excerpt counts as the whole turn it
    stands for: it is offered where that turn is, and taken when the turn does not fit (taken at
    its own length, excerpts took the room of whole turns: 15 / 19 / 19 evidence turns of 24
    against 18 / 19 / 20 on the LongMemEval dev subset at 1k / 2k / 4k). With `replies` (the query
    asks what the assistant said: `memctx.retrieve.lexical.asks_for_a_reply`) the assistant's turns
    are what is asked for, and are taken by score as they rank, whatever their length."""
    if memory.kind != "message":
        return memory.score / max(1.0, memory.token_count / LINE_TOKENS)
    tokens = max((f.token_count if f.excerpt_of is None else f.excerpt_of for f in fragments
                  if not (replies and f.role == "assistant")), default=0)
    return memory.score / max(1.0, tokens / LINE_TOKENS)


def offers(memories: Sequence[Memory], replies: bool = False) -> list[tuple[Memory, Sequence[Fragment]]]:
    """What the section may take, best worth first. Each memory is offered whole (its hit and
    every turn that comes with it), with its short companions only (`_sides`), where the
    hit itself is longer than a line with its turns shorter than the hit alone (the cheap side of
    a relevant exchange, often the user's own words, when the long turn is not worth its room,
    even a little longer than a line: each offer is worth its own length),
    and, where a long turn has a passage, with that passage in its place. So a long
    turn comes whole, as its relevant passage, or not at all. Each offer is worth the memory's
    score per line its longest turn costs (`worth`), so a long turn comes in whole when its
    exchange ranks high enough to pay for it, and as its excerpt right after, where the whole
    did not fit; an offer whose turns are already shown adds only the rest, and a turn shown as
    an excerpt becomes whole when an offer of it whole comes and fits. Where no turn is longer
    than a line, that is the search's order."""
    found: list[tuple[float, int, Memory, Sequence[Fragment]]] = []
    for memory in memories:
        whole = memory.fragments
        if memory.kind != "message":
            found.append((-worth(memory, whole, replies), len(found), memory, whole))
            continue
        if max(map(_TOKENS, whole), default=0) <= LINE_TOKENS:
            found.append((-memory.score, len(found), memory, whole))
            continue
        short, cheaper, cut, hit = _sides(memory)
        choices = [whole, short]
        if hit is not None and hit.token_count > LINE_TOKENS and cheaper:
            choices.append(cheaper)
        if any(f.excerpt_of is not None for f in cut):
            choices.append(cut)
        found += [(-worth(memory, c, replies), len(found) + i, memory, c) for i, c in enumerate(choices)]
    found.sort(key=_RANK)
    return [(memory, fragments) for _, _, memory, fragments in found]


@dataclass(frozen=True)
class MemorySection:
    """The memory message (None: nothing fitted), its sources line by line, its exact tokens and cuts."""

    message: dict[str, str] | None
    sources: list[Source]
    tokens: int
    cuts: list[Cut]
    fill: "_Fill | None" = field(default=None, compare=False, repr=False)  # to resume (`more_memories`)


@dataclass
class _Packing:
    """The memories chosen so far (by rank) and the tokens of the section they render to.

    Costs add up line by line: tiktoken never merges across the end of a line (a line's newline
    joins its last chunk, and every line starts with a non-space character), so the section's
    count is the sum of each line's count with its newline, less at most one token for the last
    line, which has none. The final exact count of the message is the guard."""

    counter: TokenCounter
    # The ints of the message ids already in the context (current turns, chosen fragments): asked
    # of every turn of every offer, and UUID.__hash__ is Python code, int's is not.
    shown: set[int]
    tokens: int  # the message's tokens with the chosen memories (an upper bound by at most one)
    chosen: dict[int, tuple[Memory, list[Fragment]]] = field(default_factory=dict)
    seqs: dict[Any, list[int]] = field(default_factory=dict)  # session key → the seqs shown under it, sorted
    excerpts: dict[UUID, int] = field(default_factory=dict)  # message id shown as an excerpt → its memory's rank
    # Each turn's line, its tokens and its session key, worked out once (a turn is costed when
    # offered, placed when taken, rendered again by every `render` of the section, and offered
    # again by the later fills of one context: `Lines`), by the fragment's identity; each entry
    # holds its fragment, so no identity is reused while the entry lives.
    turns: "Lines" = field(default_factory=dict)
    labels: Labels = field(default_factory=dict)  # the other conversations' names (`render.Labels`)
    header: str = ""  # the section's first line
    gap: int = field(init=False, default=0)  # a gap mark's tokens with its newline

    def __post_init__(self) -> None:
        self.gap = self.line(GAP)

    def line(self, text: str) -> int:
        return self.counter.count(text + "\n")

    def turn(self, fragment: Fragment) -> tuple[str, int, tuple[Any, ...], Fragment]:
        """The fragment's line (`turn_line`), its tokens (`line`) and its `session_key` (and the
        fragment itself, which keeps its identity taken)."""
        known = self.turns.get(id(fragment))
        if known is None:
            text = turn_line(fragment)
            known = self.turns[id(fragment)] = (text, self.line(text), session_key(fragment), fragment)
        return known

    def text(self, fragment: Fragment) -> str:
        return self.turn(fragment)[0]

    def cost(self, memory: Memory, fragments: Sequence[Fragment]) -> tuple[int, dict[Any, list[int]]]:
        """Tokens `memory` adds: its lines, a header for each session new to the section, and the
        gap marks it adds (or removes, when it fills a gap); and the seqs of each of its sessions
        with its turns among them, which `add` keeps when it is taken."""
        if memory.kind != "message":
            return self.line(summary_line(memory, self.labels)), {}
        total, seqs = 0, {}
        for fragment in fragments:
            _, tokens, key, _ = self.turn(fragment)
            if key not in seqs:
                seqs[key] = list(self.seqs.get(key, ()))
                total += 0 if seqs[key] else self.line(session_header(fragment, self.labels))
            total += tokens + self.gap * _insert(seqs[key], fragment.seq)
        return total, seqs

    def upgrades(self, fragments: Sequence[Fragment]) -> list[Fragment]:
        """The whole turns among `fragments` that are shown as excerpts so far."""
        if not self.excerpts:
            return []
        return [f for f in fragments if f.excerpt_of is None and f.id in self.excerpts]

    def upgrade_cost(self, whole: Fragment) -> int:
        """Tokens that showing the excerpted turn `whole` whole instead adds."""
        return self.turn(whole)[1] - self.turn(self._excerpt(whole))[1]

    def _excerpt(self, whole: Fragment) -> Fragment:
        _, fragments = self.chosen[self.excerpts[whole.id]]
        return next(f for f in fragments if f.id == whole.id)

    def add(self, rank: int, memory: Memory, fragments: list[Fragment], cost: int, seqs: dict[Any, list[int]],
            upgrades: Sequence[Fragment] = ()) -> None:
        for whole in upgrades:  # the excerpt's line becomes the whole turn's, where it stands
            _, shown = self.chosen[self.excerpts.pop(whole.id)]
            shown[:] = [whole if f.id == whole.id else f for f in shown]
        self.chosen[rank] = (memory, fragments)
        self.shown.update(f.id.int for f in fragments)
        self.excerpts.update((f.id, rank) for f in fragments if f.excerpt_of is not None)
        self.seqs.update(seqs)
        self.tokens += cost

    def drop_last(self) -> int:
        """Drop the least relevant chosen memory; its rank."""
        rank = max(self.chosen)
        _, fragments = self.chosen.pop(rank)
        self.shown.difference_update(f.id.int for f in fragments)
        for f in fragments:
            self.excerpts.pop(f.id, None)
        return rank

    def groups(self) -> list[list[Line]]:
        return memory_groups([self.chosen[rank] for rank in sorted(self.chosen)])

    def render(self, groups: Sequence[Sequence[Line]]) -> str:
        return memory_section(groups, self.text, self.labels, self.header)


def _insert(seqs: list[int], seq: int | None) -> int:
    """Insert `seq` into one session's sorted seqs; the gap marks that adds (-1, 0 or 1)."""
    if seq is None:
        return 0
    at = bisect.bisect(seqs, seq)
    before, after = (seqs[at - 1] if at else None), (seqs[at] if at < len(seqs) else None)
    seqs.insert(at, seq)
    return gap_between(before, seq) + gap_between(seq, after) - gap_between(before, after)


@dataclass
class _Fill:
    """A fill's state: its packing, what it offered (best first) and the ranks it left out. A
    later fill of the same context may resume it with more room (`more_memories`)."""

    packing: _Packing
    offered: list[tuple[Memory, Sequence[Fragment]]]
    left: list[int] = field(default_factory=list)

    def take(self, ranks: Sequence[int], budget: int) -> None:
        """Take, in order, each offer of `ranks` whose cost fits what is left of `budget`."""
        packing = self.packing
        for rank in ranks:
            memory, kept = self.offered[rank]
            fragments = [f for f in kept if f.id.int not in packing.shown]
            upgrades = packing.upgrades(kept)
            if memory.kind == "message" and not fragments and not upgrades:
                continue
            if sum(map(_TOKENS, fragments)) - len(fragments) > budget - packing.tokens:
                self.left.append(rank)  # cannot fit, whatever its lines cost (a line costs at least its text less one)
                continue
            cost, seqs = packing.cost(memory, fragments)
            cost += sum(packing.upgrade_cost(f) for f in upgrades)
            if packing.tokens + cost > budget:
                self.left.append(rank)
                continue
            packing.add(rank, memory, fragments, cost, seqs, upgrades)

    def section(self, budget: int, report_cuts: bool, resumable: bool) -> MemorySection:
        """The section as packed, exact and within `budget`, with its sources and cuts."""
        packing, counter = self.packing, self.packing.counter
        groups = packing.groups()
        text = packing.render(groups)
        tokens = message_tokens(counter, ROLE, text)
        while packing.chosen and tokens > budget:  # the guard: never over, whatever the tokenizer did
            self.left.append(packing.drop_last())
            groups = packing.groups()
            text = packing.render(groups)
            tokens = message_tokens(counter, ROLE, text)
        cuts: list[Cut] = []
        if report_cuts:
            taken = {memory.id.int for memory, _ in packing.chosen.values()}
            memories = [memory for memory, _ in self.offered]
            cuts = _cuts(list({memories[rank].id.int: memories[rank] for rank in sorted(self.left)
                               if memories[rank].id.int not in taken}.values()))
        state = self if resumable else None
        if not packing.chosen:
            return MemorySection(None, [], 0, cuts, state)
        return MemorySection({"role": ROLE, "content": text},
                             [_source(line) for group in groups for line in group], tokens, cuts, state)


def fill_memories(memories: Sequence[Memory], shown: Collection[UUID], budget: int, counter: TokenCounter, *,
                  replies: bool = False, lines: Lines | None = None, report_cuts: bool = True,
                  resumable: bool = False, labels: Labels = NO_LABELS) -> MemorySection:
    """Fill the memory section best first within `budget` tokens (its whole message, exact).

    Takes, by worth per line (`offers`), every memory whose cost fits what is left; a memory
    that does not fit is skipped and a smaller later one may still fit. Turns already shown
    (`shown`: the current context's) are not repeated; a memory with nothing new is skipped.
    `replies`: the query asks what the assistant said, and its replies are weighed as lines.
    `lines`: the turns' lines as an earlier fill of the same context worked them out (`Lines`,
    filled in here). Without `report_cuts` the section reports no cuts (a repacking, whose
    caller keeps the cuts of the fill it repacks). A `resumable` section keeps its fill's state
    for `more_memories`. `labels` names the memories' other conversations (the one asked in has none)."""
    header = memory_header([m.conversation_id.int for m in memories], labels)
    empty = message_tokens(counter, ROLE, memory_section([], header=header))
    packing = _Packing(counter, {i.int for i in shown}, empty - counter.count(header) + counter.count(header + "\n"),
                       turns={} if lines is None else lines, labels=labels, header=header)
    fill = _Fill(packing, offers(memories, replies))
    fill.take(range(len(fill.offered)), budget)
    return fill.section(budget, report_cuts, resumable)


def more_memories(section: MemorySection, budget: int) -> MemorySection:
    """`section`'s fill resumed with `budget` tokens, more than it had: the memories it left out
    for room are offered again, best first, and taken where they fit now; what it took stays.
    (A fill from scratch would cost every offer again, and might trade a memory it took for a
    better one the wider room now holds.) The state is the section's: resume it once."""
    fill = section.fill
    if fill is None:
        raise ValueError("the section was not filled resumable")
    ranks, fill.left = sorted(fill.left), []
    fill.take(ranks, budget)
    return fill.section(budget, True, True)


def _source(line: Line) -> Source:
    memory, fragment = line.memory, line.fragment
    if fragment is None:
        return Source(kind="summary", id=memory.id, section="memories", conversation_id=memory.conversation_id,
                      first_seq=memory.provenance.first_seq, last_seq=memory.provenance.last_seq, detail=memory.kind)
    detail = "hit" if fragment.id == memory.id else "context"
    # one per line of every fill: without the frozen __init__ (memctx.frozen)
    return frozen_new(Source, {"kind": "message", "id": fragment.id, "section": "memories",
                               "external_id": fragment.external_id, "conversation_id": fragment.conversation_id,
                               "seq": fragment.seq,
                               "detail": f"{detail} excerpt" if fragment.excerpt_of is not None else detail})


def _cuts(left: Sequence[Memory]) -> list[Cut]:
    if not left:
        return []
    return [Cut("dropped", "memories", "memory", tuple(str(m.id) for m in left),
                "lower-ranked memories beyond the memory budget", sum(f.token_count for m in left for f in m.fragments))]
