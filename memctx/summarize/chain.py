"""The summary hierarchy rules, as pure functions over the live chain of a conversation.

Owns: `ChainParams` (validated), the rule engine `plan_next` (which one action comes next),
`apply_action` (the chain after that action) and `simulate`/`expected_chain` (the chain after
appending messages one at a time). It must not read or write the database or write summary
text: the worker reads the live chain, asks `plan_next`, writes the summary and marks the
sources superseded in one transaction, and repeats until `plan_next` returns None.

The live chain, in chain order: the master summary (if any), then summaries from the highest
level to the lowest (each level oldest first), then raw messages oldest to newest. Because
every rule folds the oldest elements upward, chain order is also message order.

Rules, applied repeatedly until none applies, checked in this order:
 a. the chain holds >= n_sum raw messages: the oldest sum_window become one level-1 summary;
 b. some level k < max_sum_lvl holds >= n_sum_sum summaries (lowest such k first): the oldest
    n_sum_sum of level k become one level k+1 summary;
 c. there is no master and level max_sum_lvl holds >= sum_window summaries: the oldest
    sum_window of them become the master;
 d. there is a master and level max_sum_lvl holds >= 1 summary: the master and the oldest
    max-level summary merge into the updated master (updated in place, not duplicated).
Every action replaces at least two elements by one, so the rules always reach a fixed point.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Hashable, Literal, Sequence

Rule = Literal["a", "b", "c", "d"]


@dataclass(frozen=True)
class ChainParams:
    """How eagerly a conversation is summarized; `summary_length` is in tokens."""

    n_sum: int = 6
    sum_window: int = 3
    n_sum_sum: int = 3
    max_sum_lvl: int = 3
    summary_length: int = 200

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{f.name} must be an integer, got {value!r}")
        if self.sum_window < 1:
            raise ValueError(f"sum_window must be at least 1, got {self.sum_window}")
        if self.n_sum <= self.sum_window:
            raise ValueError(
                f"n_sum ({self.n_sum}) must be greater than sum_window ({self.sum_window}): "
                "the newest n_sum - sum_window messages stay raw"
            )
        if self.n_sum_sum < 2:
            raise ValueError(f"n_sum_sum must be at least 2, got {self.n_sum_sum}")
        if self.max_sum_lvl < 1:
            raise ValueError(f"max_sum_lvl must be at least 1, got {self.max_sum_lvl}")
        if self.summary_length < 16:
            raise ValueError(f"summary_length must be at least 16 tokens, got {self.summary_length}")

    @property
    def master_level(self) -> int:
        """The level a master summary is stored at: one above the highest ordinary level."""
        return self.max_sum_lvl + 1

    def messages_per_summary(self, level: int) -> int:
        """How many messages one (non-master) summary of `level` covers."""
        return self.sum_window * self.n_sum_sum ** (level - 1)


@dataclass(frozen=True)
class ChainElement:
    """One live element: a raw message (level 0), a summary (level >= 1) or the master."""

    id: Hashable
    level: int
    first_seq: int
    last_seq: int
    is_master: bool = False


@dataclass(frozen=True)
class Action:
    """One step of the hierarchy: summarize `sources` (in chain order) into a new element.

    `level` is the level of the summary to write (`params.master_level` for the master).
    When `updates_master` is true, `sources[0]` is the current master and the result replaces it.
    """

    rule: Rule
    level: int
    is_master: bool
    sources: tuple[ChainElement, ...]
    updates_master: bool = False

    @property
    def first_seq(self) -> int:
        return min(e.first_seq for e in self.sources)

    @property
    def last_seq(self) -> int:
        return max(e.last_seq for e in self.sources)

    @property
    def source_kind(self) -> Literal["message", "summary"]:
        return "message" if all(e.level == 0 and not e.is_master for e in self.sources) else "summary"


def chain_order(elements: Sequence[ChainElement]) -> list[ChainElement]:
    """Master first, then summaries from the highest level down, then raw messages; oldest first."""
    return sorted(elements, key=lambda e: (not e.is_master, -e.level, e.first_seq, e.last_seq))


def _index(elements: Sequence[ChainElement],
           params: ChainParams) -> tuple[ChainElement | None, dict[int, list[ChainElement]]]:
    masters = [e for e in elements if e.is_master]
    if len(masters) > 1:
        raise ValueError(f"the live chain holds {len(masters)} masters; at most one may be live")
    by_level: dict[int, list[ChainElement]] = {k: [] for k in range(params.max_sum_lvl + 1)}
    for e in elements:
        if e.is_master:
            continue
        if e.level < 0:
            raise ValueError(f"element {e.id!r} has negative level {e.level}")
        # A summary above max_sum_lvl (left over after max_sum_lvl was lowered) is treated as
        # a max-level summary, so it still folds into the master instead of stalling the chain.
        by_level[min(e.level, params.max_sum_lvl)].append(e)
    for group in by_level.values():
        group.sort(key=lambda e: (e.first_seq, e.last_seq))
    return (masters[0] if masters else None), by_level


def plan_next(elements: Sequence[ChainElement], params: ChainParams) -> Action | None:
    """The next action the rules call for on this live chain, or None at a fixed point.

    `elements` may come in any order; only levels, seqs and the master flag matter.
    """
    master, by_level = _index(elements, params)
    raw = by_level[0]
    if len(raw) >= params.n_sum:
        return Action("a", 1, False, tuple(raw[: params.sum_window]))
    for k in range(1, params.max_sum_lvl):
        if len(by_level[k]) >= params.n_sum_sum:
            return Action("b", k + 1, False, tuple(by_level[k][: params.n_sum_sum]))
    top = by_level[params.max_sum_lvl]
    if master is None and len(top) >= params.sum_window:
        return Action("c", params.master_level, True, tuple(top[: params.sum_window]))
    if master is not None and top:
        return Action("d", params.master_level, True, (master, top[0]), updates_master=True)
    return None


def apply_action(elements: Sequence[ChainElement], action: Action, new_id: Hashable) -> list[ChainElement]:
    """The live chain (in chain order) after `action` wrote a summary with id `new_id`.

    For a master update pass the master's own id to keep it, or a new id if the store writes a
    new master row and supersedes the old one.
    """
    gone = {(e.id, e.level, e.is_master) for e in action.sources}
    kept = [e for e in elements if (e.id, e.level, e.is_master) not in gone]
    if len(kept) != len(elements) - len(action.sources):
        raise ValueError("the action's sources are not all in the chain")
    made = ChainElement(new_id, action.level, action.first_seq, action.last_seq, action.is_master)
    return chain_order([*kept, made])


@dataclass(frozen=True)
class ChainRun:
    """The outcome of appending messages one at a time: the final chain and every action taken."""

    chain: list[ChainElement]
    actions: list[Action] = field(default_factory=list)


def simulate(n_messages: int, params: ChainParams) -> ChainRun:
    """Append messages 1..n one at a time, running the rules to a fixed point after each.

    Message ids are "m<seq>"; summaries are "s1", "s2", … in creation order; a master update
    keeps the master's id (the master is updated, not duplicated).
    """
    if n_messages < 0:
        raise ValueError(f"n_messages must be >= 0, got {n_messages}")
    chain: list[ChainElement] = []
    actions: list[Action] = []
    for seq in range(1, n_messages + 1):
        chain.append(ChainElement(f"m{seq}", 0, seq, seq))
        while (action := plan_next(chain, params)) is not None:
            actions.append(action)
            new_id = action.sources[0].id if action.updates_master else f"s{len(actions)}"
            chain = apply_action(chain, action, new_id)
    return ChainRun(chain_order(chain), actions)


def expected_chain(n_messages: int, params: ChainParams) -> list[ChainElement]:
    """The live chain, in chain order, after appending messages 1..n one at a time."""
    return simulate(n_messages, params).chain
