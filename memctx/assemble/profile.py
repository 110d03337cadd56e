"""The profile section of a working context: what the user said about themselves before, fitted.

Owns: fitting the profile's lines (`memctx.learn.recall.profile_lines`: procedures for errors seen
again, standing instructions, then the items that bear on the query) into their share of the
budget, best first, as one system message that comes first after the system prompt; its sources
(each item with the messages it was learned from) and what did not fit. The lines themselves,
and which items a context leaves out because its turns already say them, are memctx.learn's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from memctx.assemble.types import Cut, Source
from memctx.learn.recall import PROFILE_HEADER, Line, ProfileOptions, ProfileView, profile_lines
from memctx.tokens import TokenCounter, message_tokens

ROLE = "system"


@dataclass(frozen=True)
class ProfileSection:
    """The profile's message (None: nothing to show or nothing fits), its lines, tokens and sources."""

    message: dict[str, str] | None = None
    lines: tuple[Line, ...] = ()
    tokens: int = 0
    budget: int = 0
    cuts: tuple[Cut, ...] = ()
    sources: list[Source] = field(default_factory=list)


EMPTY = ProfileSection()


def fit_profile(view: ProfileView, shown: set[int], budget: int, counter: TokenCounter,
                opts: ProfileOptions) -> ProfileSection:
    """The lines that fit `budget` tokens as one message, best first (a line that does not fit is
    skipped and shorter ones may follow); `shown`: ids (ints) of the turns the context holds. The
    section's budget is then the room it took: what it leaves flows on to the memories."""
    lines = profile_lines(view, shown, opts)
    if not lines or budget <= 0:
        return ProfileSection()
    header = message_tokens(counter, ROLE, PROFILE_HEADER)
    used, kept, left = header, [], []
    for line in lines:
        cost = counter.count("\n" + line.text)
        if used + cost <= budget:
            kept.append(line)
            used += cost
            continue
        # The sum of the parts' counts can pass the whole's by a token or two: the whole decides,
        # so that a section fitted again into the tokens it took keeps every line it had.
        exact = message_tokens(counter, ROLE, _text([*kept, line]))
        if exact <= budget:
            kept.append(line)
            used = exact
        else:
            left.append(line)
    while kept and message_tokens(counter, ROLE, _text(kept)) > budget:
        left.append(kept.pop())  # tokenization across joins differed: drop the last
    cuts = (Cut("dropped", "profile", "profile", tuple(str(_id(line)) for line in left),
                "profile lines beyond the profile's share"),) if left else ()
    if not kept:
        return ProfileSection(cuts=cuts)
    message = {"role": ROLE, "content": _text(kept)}
    tokens = message_tokens(counter, ROLE, message["content"])
    return ProfileSection(message, tuple(kept), tokens, tokens, cuts, _sources(kept))


# Times the section is fitted again to what the memories came to show, each time but the last
# followed by a fill of what it freed.
REFITS = 3


def settle_profile(section: ProfileSection, view: ProfileView, shown: Callable[[], set[int]],
                   refill: Callable[[int], None] | None, counter: TokenCounter,
                   opts: ProfileOptions) -> ProfileSection:
    """The section without the items whose turns the context now shows (they say it), fitted
    again into the tokens it had. With `refill`, what a refit frees goes to the memories
    (`refill(tokens)`), whose new turns may say more items: so again, until no line goes, at most
    `REFITS` fills; the last refit's room stays unused, as a fill then could bring a turn whose
    item the section still says. `shown()`: the ids (ints) of the turns the context holds."""
    for fills_left in range(REFITS, -1, -1):
        if section.message is None:
            return section
        fitted = fit_profile(view, shown(), section.tokens, counter, opts)
        if fitted.lines == section.lines:
            return section
        freed, section = section.tokens - fitted.tokens, fitted
        if refill is None or not fills_left or freed <= 0:
            return section
        refill(freed)
    return section


def _text(lines: Sequence[Line]) -> str:
    return "\n".join([PROFILE_HEADER, *(line.text for line in lines)])


def _id(line: Line) -> object:
    return line.item.id if line.item is not None else line.procedure.id if line.procedure is not None else ""


def _sources(lines: Sequence[Line]) -> list[Source]:
    out = []
    for line in lines:
        if line.item is not None:
            item = line.item
            first = item.sources[0] if item.sources else None
            out.append(Source(kind="profile", id=item.id, section="profile", detail=item.kind,
                              external_id=first.external_id if first else None,
                              conversation_id=first.conversation_id if first else None,
                              learned_from=tuple(str(s.message_id) for s in item.sources)))
        elif line.procedure is not None:
            p = line.procedure
            out.append(Source(kind="procedure", id=p.id, section="profile", detail=p.tool,
                              learned_from=tuple(str(s.message_id) for s in p.sources)))
    return out
