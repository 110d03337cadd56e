"""How memories, summaries and board entries read inside the context. Pure.

Owns: the text of each section. Memory blocks carry their date (so the model can answer
"when" questions) and who said each line; the raw text of a turn is kept verbatim.
"""

from __future__ import annotations

from datetime import datetime
from typing import Sequence

from memctx.retrieve.types import Fragment, Memory
from memctx.search.types import WebResult
from memctx.summarize.text import format_day

MEMORY_HEADER = "Relevant memories from earlier in the conversation (most relevant last):"
EXTERNAL_HEADER = "External search results:"
SUMMARY_HEADER = "Conversation summary:"


def format_date(moment: datetime | None) -> str:
    return format_day(moment) if moment else ""


def fragment_line(fragment: Fragment, *, dated: bool) -> str:
    prefix = f"[{format_date(fragment.time)}] " if dated and fragment.time else ""
    return f"{prefix}{fragment.who}: {fragment.text}"


def memory_block(memory: Memory, fragments: Sequence[Fragment] | None = None) -> str:
    """One memory as lines; `fragments` overrides the memory's own (after de-duplication)."""
    parts = list(memory.fragments if fragments is None else fragments)
    if memory.kind != "message":
        p = memory.provenance
        return f"[summary of messages {p.first_seq}-{p.last_seq}] {memory.text}"
    lines, day = [], None
    for fragment in parts:
        this_day = fragment.time.date() if fragment.time else None
        lines.append(fragment_line(fragment, dated=this_day != day))
        day = this_day
    return "\n".join(lines)


def external_block(result: WebResult, text: str) -> str:
    """One web result: its title and URL (for citation), then its cleaned text."""
    return f"[{result.title}]({result.url})\n{text}".rstrip()


def external_section(blocks: Sequence[str]) -> str:
    return "\n".join([EXTERNAL_HEADER, *blocks])


def memory_section(blocks: Sequence[str]) -> str:
    return "\n".join([MEMORY_HEADER, *blocks])


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
