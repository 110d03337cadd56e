"""Dev data in two halves: a rule that helps one half and not the other fits the data, not chat.

Owns: which half each instance (LongMemEval, by `question_id`) or conversation (LoCoMo, by
`sample_id`) falls in: sorted by id, the odd positions (1st, 3rd, …) one half and the even ones
the other. Pure.
"""

from __future__ import annotations

from typing import Iterable, Literal

Half = Literal["odd", "even"]
HALVES: tuple[Half, ...] = ("odd", "even")


def halves(ids: Iterable[str]) -> dict[str, Half]:
    """Each id's half: sorted, odd positions (1-based) 'odd', even positions 'even'."""
    return {i: ("odd" if n % 2 == 0 else "even") for n, i in enumerate(sorted(set(ids)))}
