"""The memory section: search hits packed best first under their share of the budget.

Owns: choosing which memories fit, with each session's header counted once however many of its
turns are shown, and the sources and cuts of the section. The text is memctx.assemble.render's;
this module never reorders the ranking and never shortens a turn.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, Sequence

from memctx.assemble.render import (GAP, MEMORY_HEADER, Line, gap_between, memory_groups, memory_section, session_header,
                                   session_key, summary_line, turn_line)
from memctx.assemble.types import Cut, Source
from memctx.retrieve.types import Fragment, Memory
from memctx.tokens import TokenCounter, message_tokens

ROLE = "system"


@dataclass(frozen=True)
class MemorySection:
    """The memory message (None: nothing fitted), its sources line by line, its exact tokens and cuts."""

    message: dict[str, str] | None
    sources: list[Source]
    tokens: int
    cuts: list[Cut]


@dataclass
class _Packing:
    """The memories chosen so far (by rank) and the tokens of the section they render to.

    Costs add up line by line: tiktoken never merges across the end of a line (a line's newline
    joins its last chunk, and every line starts with a non-space character), so the section's
    count is the sum of each line's count with its newline, less at most one token for the last
    line, which has none. The final exact count of the message is the guard."""

    counter: TokenCounter
    shown: set[str]  # message ids already in the context (current turns, chosen fragments)
    tokens: int  # the message's tokens with the chosen memories (an upper bound by at most one)
    chosen: dict[int, tuple[Memory, list[Fragment]]] = field(default_factory=dict)
    seqs: dict[Any, list[int]] = field(default_factory=dict)  # session key → the seqs shown under it, sorted

    def line(self, text: str) -> int:
        return self.counter.count(text + "\n")

    def cost(self, memory: Memory, fragments: Sequence[Fragment]) -> int:
        """Tokens `memory` adds: its lines, a header for each session new to the section, and the
        gap marks it adds (or removes, when it fills a gap)."""
        if memory.kind != "message":
            return self.line(summary_line(memory))
        total, seqs = 0, {}
        for fragment in fragments:
            key = session_key(fragment)
            if key not in seqs:
                seqs[key] = list(self.seqs.get(key, ()))
                total += 0 if seqs[key] else self.line(session_header(fragment))
            total += self.line(turn_line(fragment)) + self.line(GAP) * _insert(seqs[key], fragment.seq)
        return total

    def add(self, rank: int, memory: Memory, fragments: list[Fragment], cost: int) -> None:
        self.chosen[rank] = (memory, fragments)
        self.shown.update(str(f.id) for f in fragments)
        for fragment in fragments:
            _insert(self.seqs.setdefault(session_key(fragment), []), fragment.seq)
        self.tokens += cost

    def drop_last(self) -> int:
        """Drop the least relevant chosen memory; its rank."""
        rank = max(self.chosen)
        _, fragments = self.chosen.pop(rank)
        self.shown.difference_update(str(f.id) for f in fragments)
        return rank

    def groups(self) -> list[list[Line]]:
        return memory_groups([self.chosen[rank] for rank in sorted(self.chosen)])


def _insert(seqs: list[int], seq: int | None) -> int:
    """Insert `seq` into one session's sorted seqs; the gap marks that adds (-1, 0 or 1)."""
    if seq is None:
        return 0
    at = bisect.bisect(seqs, seq)
    before, after = (seqs[at - 1] if at else None), (seqs[at] if at < len(seqs) else None)
    seqs.insert(at, seq)
    return gap_between(before, seq) + gap_between(seq, after) - gap_between(before, after)


def fill_memories(memories: Sequence[Memory], shown: set[str], budget: int, counter: TokenCounter) -> MemorySection:
    """Fill the memory section best first within `budget` tokens (its whole message, exact).

    Takes, in rank order, every memory whose cost fits what is left; a memory that does not fit
    is skipped and a smaller later one may still fit. Turns already shown (`shown`: the current
    context's) are not repeated; a memory with nothing new is skipped."""
    empty = message_tokens(counter, ROLE, memory_section([]))
    packing = _Packing(counter, set(shown), empty - counter.count(MEMORY_HEADER) + counter.count(MEMORY_HEADER + "\n"))
    left: list[int] = []
    for rank, memory in enumerate(memories):
        fragments = [f for f in memory.fragments if str(f.id) not in packing.shown]
        if memory.kind == "message" and not fragments:
            continue
        if sum(f.token_count for f in fragments) - len(fragments) > budget - packing.tokens:
            left.append(rank)  # cannot fit, whatever its lines cost (a line costs at least its text less one)
            continue
        cost = packing.cost(memory, fragments)
        if packing.tokens + cost > budget:
            left.append(rank)
            continue
        packing.add(rank, memory, fragments, cost)
    groups = packing.groups()
    tokens = message_tokens(counter, ROLE, memory_section(groups))
    while packing.chosen and tokens > budget:  # the guard: never over, whatever the tokenizer did
        left.append(packing.drop_last())
        groups = packing.groups()
        tokens = message_tokens(counter, ROLE, memory_section(groups))
    cuts = _cuts([memories[rank] for rank in sorted(left)])
    if not packing.chosen:
        return MemorySection(None, [], 0, cuts)
    return MemorySection({"role": ROLE, "content": memory_section(groups)},
                         [_source(line) for group in groups for line in group], tokens, cuts)


def _source(line: Line) -> Source:
    memory, fragment = line.memory, line.fragment
    if fragment is None:
        return Source(kind="summary", id=memory.id, section="memories", conversation_id=memory.conversation_id,
                      first_seq=memory.provenance.first_seq, last_seq=memory.provenance.last_seq, detail=memory.kind)
    return Source(kind="message", id=fragment.id, section="memories", external_id=fragment.external_id,
                  conversation_id=fragment.conversation_id, seq=fragment.seq,
                  detail="hit" if fragment.id == memory.id else "context")


def _cuts(left: Sequence[Memory]) -> list[Cut]:
    if not left:
        return []
    return [Cut("dropped", "memories", "memory", tuple(str(m.id) for m in left),
                "lower-ranked memories beyond the memory budget", sum(m.token_count for m in left))]
