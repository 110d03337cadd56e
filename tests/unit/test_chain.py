"""The summary hierarchy rules: hand-computed chains and properties over many parameter sets."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.summarize.chain import (
    Action,
    ChainElement,
    ChainParams,
    apply_action,
    chain_order,
    expected_chain,
    plan_next,
    simulate,
)

DEFAULTS = ChainParams()


def shape(chain: list[ChainElement]) -> list[str]:
    """A chain as readable tokens: M[1-81], L2[1-9], 10 (a raw message)."""
    out = []
    for e in chain:
        if e.is_master:
            out.append(f"M[{e.first_seq}-{e.last_seq}]")
        elif e.level == 0:
            out.append(str(e.first_seq))
        else:
            out.append(f"L{e.level}[{e.first_seq}-{e.last_seq}]")
    return out


# Hand-computed chains with the defaults (n_sum=6, sum_window=3, n_sum_sum=3, max_sum_lvl=3).
# Raw messages pile up to 6, then the oldest 3 fold into an L1: an L1 appears at messages
# 6, 9, 12, … covering [1-3], [4-6], [7-9], …; three L1s make an L2 (9 messages), three L2s an
# L3 (27 messages), three L3s the master (81 messages), and every later L3 merges into it.
HAND_COMPUTED = {
    0: [],
    5: ["1", "2", "3", "4", "5"],
    6: ["L1[1-3]", "4", "5", "6"],
    8: ["L1[1-3]", "4", "5", "6", "7", "8"],
    9: ["L1[1-3]", "L1[4-6]", "7", "8", "9"],
    # 12: the third L1 [7-9] makes L1 count 3 -> L2[1-9].
    12: ["L2[1-9]", "10", "11", "12"],
    # 18: L1[10-12] at 15, L1[13-15] at 18; raw 16-18.
    18: ["L2[1-9]", "L1[10-12]", "L1[13-15]", "16", "17", "18"],
    # 21: L1[16-18] is the third L1 -> L2[10-18].
    21: ["L2[1-9]", "L2[10-18]", "19", "20", "21"],
    # 27: L1[19-21] at 24 and L1[22-24] at 27; the third L2 needs L1[25-27] (at 30).
    27: ["L2[1-9]", "L2[10-18]", "L1[19-21]", "L1[22-24]", "25", "26", "27"],
    # 30: L1[25-27] -> L2[19-27] -> three L2s -> L3[1-27].
    30: ["L3[1-27]", "28", "29", "30"],
    # 54: 27 messages after 27 look like the chain at 27, shifted by 27.
    54: ["L3[1-27]", "L2[28-36]", "L2[37-45]", "L1[46-48]", "L1[49-51]", "52", "53", "54"],
    57: ["L3[1-27]", "L3[28-54]", "55", "56", "57"],
    # 83: the chain at 29 shifted by 54, under two L3s.
    83: ["L3[1-27]", "L3[28-54]", "L2[55-63]", "L2[64-72]", "L1[73-75]", "L1[76-78]",
         "79", "80", "81", "82", "83"],
    # 84: L1[79-81] -> L2[73-81] -> L3[55-81] -> third L3 -> master [1-81].
    84: ["M[1-81]", "82", "83", "84"],
    # 111: L3[82-108] appears and merges into the master (rule d).
    111: ["M[1-108]", "109", "110", "111"],
}


@pytest.mark.parametrize("n", sorted(HAND_COMPUTED))
def test_expected_chain_matches_hand_computed_defaults(n: int) -> None:
    assert shape(expected_chain(n, DEFAULTS)) == HAND_COMPUTED[n]


def test_master_is_created_by_a_cascade_and_then_updated_not_duplicated() -> None:
    at_83 = simulate(83, DEFAULTS)
    at_84 = simulate(84, DEFAULTS)
    cascade = at_84.actions[len(at_83.actions):]
    assert [(a.rule, a.level) for a in cascade] == [("a", 1), ("b", 2), ("b", 3), ("c", 4)]
    assert [shape([e])[0] for e in cascade[-1].sources] == ["L3[1-27]", "L3[28-54]", "L3[55-81]"]
    master = at_84.chain[0]
    run = simulate(111, DEFAULTS)
    update = run.actions[-1]
    assert update.rule == "d" and update.updates_master
    assert [shape([e])[0] for e in update.sources] == ["M[1-81]", "L3[82-108]"]
    assert run.chain[0].id == master.id  # the same master, updated in place
    assert sum(e.is_master for e in run.chain) == 1


def test_small_params_reach_master_updates_quickly() -> None:
    # L1 covers 2 messages; the master starts from 2 L1s and absorbs every later L1.
    params = ChainParams(n_sum=3, sum_window=2, n_sum_sum=2, max_sum_lvl=1, summary_length=16)
    assert shape(expected_chain(3, params)) == ["L1[1-2]", "3"]
    assert shape(expected_chain(5, params)) == ["M[1-4]", "5"]
    assert shape(expected_chain(7, params)) == ["M[1-6]", "7"]


# plan_next on hand-built chains -----------------------------------------------------------------

def planned(chain: list[ChainElement], params: ChainParams = DEFAULTS) -> Action:
    action = plan_next(chain, params)
    assert action is not None
    return action


def raw(*seqs: int) -> list[ChainElement]:
    return [ChainElement(f"m{s}", 0, s, s) for s in seqs]


def summ(level: int, first: int, last: int, *, master: bool = False) -> ChainElement:
    return ChainElement(f"{'M' if master else 'L'}{level}:{first}-{last}", level, first, last, master)


def test_rule_a_folds_the_oldest_window_of_raw_messages() -> None:
    action = planned(raw(1, 2, 3, 4, 5, 6))
    assert action is not None and action.rule == "a" and action.level == 1
    assert [e.first_seq for e in action.sources] == [1, 2, 3]
    assert action.source_kind == "message" and (action.first_seq, action.last_seq) == (1, 3)


def test_rule_a_wins_over_rule_b() -> None:
    chain = [summ(1, 1, 3), summ(1, 4, 6), summ(1, 7, 9), *raw(10, 11, 12, 13, 14, 15)]
    assert planned(chain).rule == "a"


def test_rule_b_takes_the_lowest_full_level_first() -> None:
    chain = [summ(2, 1, 9), summ(2, 10, 18), summ(2, 19, 27), summ(1, 28, 30), summ(1, 31, 33),
             summ(1, 34, 36), *raw(37, 38)]
    action = planned(chain)
    assert action.rule == "b" and action.level == 2 and action.source_kind == "summary"
    assert [e.first_seq for e in action.sources] == [28, 31, 34]


def test_rule_c_makes_the_master_from_the_oldest_top_level_summaries() -> None:
    chain = [summ(3, 1, 27), summ(3, 28, 54), summ(3, 55, 81), *raw(82)]
    action = planned(chain)
    assert action.rule == "c" and action.is_master and not action.updates_master
    assert action.level == DEFAULTS.master_level == 4
    assert [e.first_seq for e in action.sources] == [1, 28, 55]


def test_rule_d_merges_master_and_oldest_top_summary() -> None:
    master = summ(4, 1, 81, master=True)
    chain = [master, summ(3, 82, 108), *raw(109)]
    action = planned(chain)
    assert action.rule == "d" and action.updates_master and action.sources == (master, chain[1])
    after = apply_action(chain, action, master.id)
    assert shape(after) == ["M[1-108]", "109"] and after[0].id == master.id


def test_fixed_point_returns_none() -> None:
    assert plan_next([], DEFAULTS) is None
    assert plan_next([summ(4, 1, 81, master=True), *raw(82, 83)], DEFAULTS) is None


def test_plan_next_ignores_input_order() -> None:
    chain = [summ(2, 1, 9), summ(1, 10, 12), summ(1, 13, 15), summ(1, 16, 18), *raw(19, 20)]
    shuffled = chain[:]
    random.Random(7).shuffle(shuffled)
    assert plan_next(shuffled, DEFAULTS) == plan_next(chain, DEFAULTS)


def test_two_live_masters_are_refused() -> None:
    with pytest.raises(ValueError, match="masters"):
        plan_next([summ(4, 1, 81, master=True), summ(4, 82, 162, master=True)], DEFAULTS)


def test_summary_above_max_level_folds_like_a_top_level_one() -> None:
    params = ChainParams(max_sum_lvl=2)
    chain = [summ(3, 1, 27), summ(2, 28, 36), summ(2, 37, 45)]  # left over from max_sum_lvl=3
    action = planned(chain, params)
    assert action.rule == "c" and [e.first_seq for e in action.sources] == [1, 28, 37]


def test_apply_action_refuses_sources_not_in_the_chain() -> None:
    action = planned(raw(1, 2, 3, 4, 5, 6))
    with pytest.raises(ValueError, match="not all in the chain"):
        apply_action(raw(4, 5, 6), action, "s1")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_sum": 3, "sum_window": 3}, "n_sum .* greater than sum_window"),
        ({"sum_window": 0}, "sum_window must be at least 1"),
        ({"n_sum_sum": 1}, "n_sum_sum must be at least 2"),
        ({"max_sum_lvl": 0}, "max_sum_lvl must be at least 1"),
        ({"summary_length": 15}, "summary_length must be at least 16"),
        ({"n_sum": 6.0}, "n_sum must be an integer"),
        ({"n_sum_sum": True}, "n_sum_sum must be an integer"),
    ],
)
def test_params_are_validated(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ChainParams(**kwargs)


def test_chain_order_puts_master_then_high_levels_then_raw() -> None:
    elements = [*raw(10), summ(1, 7, 9), summ(4, 1, 3, master=True), summ(2, 4, 6)]
    assert shape(chain_order(elements)) == ["M[1-3]", "L2[4-6]", "L1[7-9]", "10"]


# Properties ----------------------------------------------------------------------------------

params_strategy = st.builds(
    lambda window, extra, merge, levels: ChainParams(
        n_sum=window + extra, sum_window=window, n_sum_sum=merge, max_sum_lvl=levels, summary_length=64),
    window=st.integers(1, 4), extra=st.integers(1, 4), merge=st.integers(2, 4), levels=st.integers(1, 4),
)


def created_per_level(n: int, p: ChainParams) -> dict[int, int]:
    """Summaries ever created per level, by arithmetic: L1s appear each time raw reaches n_sum,
    and every n_sum_sum summaries of a level make one of the next."""
    created = {1: max(0, (n - p.n_sum + p.sum_window) // p.sum_window)}
    for k in range(2, p.max_sum_lvl + 1):
        created[k] = created[k - 1] // p.n_sum_sum
    return created


@settings(max_examples=150, deadline=None)
@given(params=params_strategy, n=st.integers(0, 300))
def test_chain_properties(params: ChainParams, n: int) -> None:
    run = simulate(n, params)
    chain = run.chain
    # Every message 1..n is covered by exactly one live element; chain order is message order.
    expected_first = 1
    for e in chain:
        assert e.first_seq == expected_first and e.last_seq >= e.first_seq
        expected_first = e.last_seq + 1
    assert expected_first == n + 1
    assert chain == chain_order(chain)
    # Fixed point, and the per-level bounds the rules promise.
    assert plan_next(chain, params) is None
    by_level = {k: [e for e in chain if e.level == k and not e.is_master] for k in range(params.max_sum_lvl + 1)}
    masters = [e for e in chain if e.is_master]
    assert len(by_level[0]) < params.n_sum
    stays_raw = params.n_sum - params.sum_window
    assert len(by_level[0]) == (n if n < params.n_sum else stays_raw + (n - params.n_sum) % params.sum_window)
    for k in range(1, params.max_sum_lvl):
        assert len(by_level[k]) < params.n_sum_sum
    top = by_level[params.max_sum_lvl]
    assert len(top) == 0 if masters else len(top) < params.sum_window
    # Each ordinary summary covers exactly its level's share of messages.
    for k in range(1, params.max_sum_lvl + 1):
        assert all(e.last_seq - e.first_seq + 1 == params.messages_per_summary(k) for e in by_level[k])
    # Counts agree with arithmetic: no master before sum_window top-level summaries exist.
    created = created_per_level(n, params)
    top_created = created[params.max_sum_lvl]
    assert len(masters) == (1 if top_created >= params.sum_window else 0)
    if masters:
        assert masters[0].first_seq == 1
        assert masters[0].last_seq == top_created * params.messages_per_summary(params.max_sum_lvl)
        assert masters[0].level == params.master_level
    master_actions = max(0, top_created - params.sum_window + 1)
    assert len(run.actions) == sum(created.values()) + master_actions
    assert len(run.actions) <= 3 * n / params.sum_window


@settings(max_examples=60, deadline=None)
@given(params=params_strategy, n=st.integers(1, 200))
def test_every_action_folds_adjacent_elements_in_order(params: ChainParams, n: int) -> None:
    for action in simulate(n, params).actions:
        seqs = [(e.first_seq, e.last_seq) for e in action.sources]
        assert all(a[1] + 1 == b[0] for a, b in zip(seqs, seqs[1:], strict=False))
        levels = {e.level for e in action.sources if not e.is_master}
        if action.rule == "a":
            assert levels == {0} and len(seqs) == params.sum_window and action.level == 1
        elif action.rule == "b":
            assert levels == {action.level - 1} and len(seqs) == params.n_sum_sum
        elif action.rule == "c":
            assert levels == {params.max_sum_lvl} and len(seqs) == params.sum_window
        else:
            assert action.sources[0].is_master and len(seqs) == 2 and action.updates_master
