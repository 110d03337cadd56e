"""How memories, summaries and board entries read inside the context. Pure.

Owns: the text of each section. Memory turns are grouped by the session they were said in,
under one date header per session (so the model can answer "when" questions without the date
repeated on every line), in conversation order with "…" where turns were skipped; each line says
who spoke, and the raw text of a turn is kept verbatim (a quoted turn is evidence), followed, when
it has relative dates, by what they meant on the day it was said ("(yesterday = 7 May 2023)").
A long message may be shown by its relevant passage, verbatim too, marked as an excerpt of it
("assistant (excerpt of a 640-token reply): …passage…"). A memory of another of the user's
conversations says which one under its date ('[7 November 2026, conversation "Weekend diary"]'),
and the section's header says whose conversations it draws on; a context that carries memories
says what day it is asked on ("Today is Saturday, 28 November 2026.").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from memctx.dates import relative_dates
from memctx.retrieve.types import Fragment, Memory
from memctx.web.types import WebResult
from memctx.summarize.text import format_day

MEMORY_HEADER = "Relevant memories from earlier in the conversation (most relevant last):"
OTHERS_HEADER = "Relevant memories from the user's other conversations (most relevant last):"
MIXED_HEADER = "Relevant memories from this and the user's other conversations (most relevant last):"
ANOTHER = "another conversation"  # a conversation with neither title nor external id
LABEL_CHARS = 60  # a longer title or external id is cut, with "…"
EXTERNAL_HEADER = "External search results:"
SUMMARY_HEADER = "Conversation summary:"
GAP = "…"  # turns skipped between two shown turns of one session (one token with its newline)
EXCERPT = "…"  # around the passage of a long message shown as an excerpt
UNDATED = "[undated]"


def chat_turn(role: str, text: str) -> dict[str, str]:
    """A stored turn as a chat message of the context. Users, assistants and system prompts keep
    their roles; a tool's result is not something the user said, so it reads as one, in the user
    role the chat format leaves it ("[tool result: …]", beside the assistant's "[tool call …]": a
    `tool` message needs the call's id and the assistant's structured call, which the context does
    not carry); other roles (agent, observer) speak as the user."""
    if role in ("user", "assistant", "system"):
        return {"role": role, "content": text}
    if role == "tool":
        return {"role": "user", "content": f"[tool result: {text}]"}
    return {"role": "user", "content": text}


def format_date(moment: datetime | None) -> str:
    return format_day(moment) if moment else ""


@dataclass(frozen=True)
class Line:
    """What one item of the memory section came from: a turn (`fragment`) of `memory`, or the
    summary `memory` itself (`fragment` None)."""

    memory: Memory
    fragment: Fragment | None = None


def session_key(fragment: Fragment) -> tuple[Any, ...]:
    """The turns that share one header: same conversation, session and day (plain ints: this is
    hashed for every candidate turn of every call)."""
    return fragment.conversation_id.int, fragment.session, fragment.time.toordinal() if fragment.time else None


# Another conversation's id → what its memories say it is (`conversation_label`); a conversation
# not in it is the one asked in, whose memories need no name.
Labels = Mapping[int, str]
NO_LABELS: Labels = MappingProxyType({})


def conversation_label(title: str | None, external_id: str | None) -> str:
    """How a memory names the conversation it comes from: its title, else its external id."""
    name = " ".join((title or external_id or "").split())
    if not name:
        return ANOTHER
    return f'conversation "{name if len(name) <= LABEL_CHARS else name[:LABEL_CHARS - 1] + "…"}"'


def memory_header(conversations: Sequence[int], labels: Labels) -> str:
    """The memory section's first line, for memories of these conversations (UUID ints)."""
    others = sum(1 for c in set(conversations) if c in labels)
    if not others:
        return MEMORY_HEADER
    return OTHERS_HEADER if others == len(set(conversations)) else MIXED_HEADER


def today_line(day: date) -> str:
    """What a context carrying dated memories says of the day it is asked on."""
    return f"Today is {day:%A}, {format_day(day)}."


def session_header(fragment: Fragment, labels: Labels = NO_LABELS) -> str:
    label = labels.get(fragment.conversation_id.int)
    if fragment.time is None:
        return f"[undated, {label}]" if label else UNDATED
    return f"[{format_date(fragment.time)}, {label}]" if label else f"[{format_date(fragment.time)}]"


def turn_line(fragment: Fragment) -> str:
    if fragment.excerpt_of is not None:
        return f"{fragment.who} ({excerpt_label(fragment)}): {EXCERPT}{fragment.text}{EXCERPT}{date_note(fragment)}"
    return f"{fragment.who}: {fragment.text}{date_note(fragment)}"


def excerpt_label(fragment: Fragment) -> str:
    """What an excerpt line says it is: a passage of a longer message, and how long that is."""
    said = "reply" if fragment.role == "assistant" else "message"
    return f"excerpt of a {fragment.excerpt_of}-token {said}"


def date_note(fragment: Fragment) -> str:
    """What the turn's relative dates meant on the day it was said, to follow its verbatim text
    (" (yesterday = 7 May 2023; next month = June 2023)"); '' when it has none."""
    found = relative_dates(fragment.text, fragment.time.date()) if fragment.time else ()
    return f" ({'; '.join(f'{d.phrase} = {d.meaning}' for d in found)})" if found else ""


def summary_line(memory: Memory, labels: Labels = NO_LABELS) -> str:
    p = memory.provenance
    label = labels.get(memory.conversation_id.int)
    return f"[summary of messages {p.first_seq}-{p.last_seq}{', ' + label if label else ''}] {memory.text}"


def memory_groups(chosen: Sequence[tuple[Memory, Sequence[Fragment]]]) -> list[list[Line]]:
    """The chosen memories (best first, each with the fragments it shows) in reading order: the
    turns of one session together in conversation order, each summary alone, and the group that
    holds the best memory last, nearest the query."""
    groups: dict[Any, list[Line]] = {}
    for memory, fragments in chosen:
        if memory.kind != "message":
            groups[memory.id] = [Line(memory)]
            continue
        for fragment in fragments:
            groups.setdefault(session_key(fragment), []).append(Line(memory, fragment))
    return [sorted(g, key=lambda line: line.fragment.seq or 0) if g[0].fragment else g
            for g in reversed(groups.values())]


def gap_between(first: int | None, then: int | None) -> bool:
    """Whether turns were skipped between two shown turns of one session (a GAP line between them)."""
    return first is not None and then is not None and then > first + 1


def group_lines(group: Sequence[Line], line_of: Callable[[Fragment], str] = turn_line,
                labels: Labels = NO_LABELS) -> list[str]:
    """A summary's line, or a session's header and turns (each `line_of` it: its `turn_line`,
    perhaps written before) with a gap mark between turns that were not said one after the other."""
    first = group[0].fragment
    if first is None:
        return [summary_line(group[0].memory, labels)]
    lines, seq = [session_header(first, labels)], None
    for line in group:
        fragment = line.fragment
        if gap_between(seq, fragment.seq):
            lines.append(GAP)
        lines.append(line_of(fragment))
        seq = fragment.seq
    return lines


def external_block(result: WebResult, text: str) -> str:
    """One web result: its title and URL (for citation), then its cleaned text."""
    return f"[{result.title}]({result.url})\n{text}".rstrip()


def external_section(blocks: Sequence[str]) -> str:
    return "\n".join([EXTERNAL_HEADER, *blocks])


def memory_section(groups: Sequence[Sequence[Line]], line_of: Callable[[Fragment], str] = turn_line,
                   labels: Labels = NO_LABELS, header: str = MEMORY_HEADER) -> str:
    return "\n".join([header, *(text for group in groups for text in group_lines(group, line_of, labels))])


def current_section(master: str | None, summaries: Sequence[str], board_summary: str | None,
                    facts: Sequence[str], constraints: Sequence[str], compressed: str | None) -> str:
    """The summaries-and-board system message of the current context ('' when empty)."""
    parts: list[str] = []
    if master:
        parts += [SUMMARY_HEADER, master]
    if board_summary and board_summary.strip() and board_summary.strip() != (master or "").strip():
        parts += ["Running summary:", board_summary]
    if summaries:
        parts += ["Earlier parts of the conversation:", *summaries]
    if facts:
        parts += ["Key facts:", *(f"- {f}" for f in facts)]
    if constraints:
        parts += ["Constraints and preferences to respect:", *(f"- {c}" for c in constraints)]
    if compressed:
        parts += ["Earlier recent turns (compressed):", compressed]
    return "\n".join(parts)
