"""Prompts for the LLM summarizer, as code: one function per prompt, its response model beside it.

Owns: the wording of every summarization prompt and the pydantic models the model's JSON reply
must validate against. Each prompt function returns the chat messages; it must not call a
model, and the response models accept extra keys but never a missing or empty required one.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from memctx.summarize.text import format_day
from memctx.summarize.types import SECTIONS, Board, SourceText

Messages = list[dict[str, str]]

_SYSTEM = (
    "You maintain the long-term memory of a chat application. You write faithful, dense "
    "summaries of conversations that an assistant will later rely on to answer questions about "
    "what was said, by whom and when. You reply with one JSON object and nothing else."
)

_RULES = """Rules:
- Keep every concrete fact: who said or did what (use the speakers' names, e.g. "Caroline \
said…", never "the user"), names of people, places and organizations, dates and times, numbers \
and amounts, decisions, plans and open questions.
- Keep stated preferences, standing instructions and corrections. When something was corrected, \
keep only the corrected version and say that it was corrected.
- Anchor events in time: give the date something happened or was said (e.g. "on 8 May 2023"), \
resolving relative dates such as "yesterday" or "last week" against the date of the message.
- Leave out greetings, thanks and small talk. Do not add anything that is not in the text.
- Write in the language of the conversation, in plain prose, oldest first.
- Use at most {words} words."""

_REPLY = 'Reply with a JSON object of the form {"summary": "<the summary>"}.'


def _words(max_tokens: int) -> int:
    return max(8, max_tokens * 3 // 4)


def transcript(sources: Sequence[SourceText]) -> str:
    """The sources as the model reads them: one line per message, a block per summary."""
    lines: list[str] = []
    for s in sources:
        if s.kind == "message":
            when = f" · {format_day(s.created_at.date())}" if s.created_at else ""
            who = f"{s.who}: " if s.who else ""
            lines.append(f"[#{s.first_seq}{when}] {who}{s.text}")
        else:
            lines.append(f"[summary, level {s.level}, messages {s.first_seq}–{s.last_seq}]\n{s.text}")
    return "\n".join(lines)


class SummaryResponse(BaseModel):
    """The reply to `level1_prompt`, `higher_level_prompt` and `master_prompt`."""

    model_config = ConfigDict(extra="ignore")

    summary: str = Field(min_length=1)

    @field_validator("summary")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("summary is blank")
        return value.strip()


def level1_prompt(sources: Sequence[SourceText], *, max_tokens: int) -> Messages:
    """Summarize a window of raw messages."""
    span = f"messages {sources[0].first_seq}–{sources[-1].last_seq}" if sources else "messages"
    user = (
        f"Summarize these {span} of a conversation.\n\n{_RULES.format(words=_words(max_tokens))}\n\n"
        f"{_REPLY}\n\nMessages:\n{transcript(sources)}"
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


def higher_level_prompt(sources: Sequence[SourceText], *, level: int, max_tokens: int) -> Messages:
    """Merge consecutive summaries of level - 1 into one summary of `level` (level >= 2)."""
    user = (
        f"Merge these consecutive summaries of one conversation into a single level-{level} "
        "summary that covers all of them. Keep the facts of every part; drop only repetition "
        f"and small talk.\n\n{_RULES.format(words=_words(max_tokens))}\n\n{_REPLY}\n\n"
        f"Summaries, oldest first:\n{transcript(sources)}"
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


def master_prompt(sources: Sequence[SourceText], *, previous: str | None, max_tokens: int) -> Messages:
    """Create the master summary of the whole conversation, or update it with newer summaries."""
    rules = _RULES.format(words=_words(max_tokens))
    if previous:
        task = (
            "Update the master summary of a conversation with the newer summaries below. Keep "
            "every fact, preference and correction of the current master that is still valid, "
            "integrate the new facts, and remove only what was superseded or is trivial."
            f"\n\n{rules}\n\n{_REPLY}\n\nCurrent master summary:\n{previous}\n\n"
            f"Newer summaries, oldest first:\n{transcript(sources)}"
        )
    else:
        task = (
            "Write the master summary of a conversation so far from these consecutive summaries."
            f"\n\n{rules}\n\n{_REPLY}\n\nSummaries, oldest first:\n{transcript(sources)}"
        )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": task}]


class EntitiesResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    people: list[str] = Field(default_factory=list)
    places: list[str] = Field(default_factory=list)
    organizations: list[str] = Field(default_factory=list)
    other: list[str] = Field(default_factory=list)


class _BoardLines(SummaryResponse):
    """A board reply's lists of lines, where small models often write a line as an object:
    {"Name": "Caroline", "fact": "went to a support group"} reads as "Caroline: went to a support
    group" (its string values joined by ": "); anything else is left for validation to refuse."""

    @field_validator(*(s.name for s in SECTIONS if s.name != "entities"), mode="before", check_fields=False)
    @classmethod
    def _object_lines(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        return [": ".join(v.strip() for v in line.values()) if isinstance(line, dict) and line
                and all(isinstance(v, str) and v.strip() for v in line.values()) else line for line in value]


# The reply to `board_prompt`: the summary (as in SummaryResponse) and one list per board section
# (entities by kind), each line a string.
BoardResponse: type[SummaryResponse] = create_model(  # type: ignore[call-overload]
    "BoardResponse", __base__=_BoardLines,
    **{s.name: ((EntitiesResponse, Field(default_factory=EntitiesResponse)) if s.name == "entities"
                else (list[str], Field(default_factory=list))) for s in SECTIONS},
)


def _board_fields(words: int) -> str:
    lines = [f'- "summary": the current summary of the whole conversation, at most {words} words.']
    lines += [f'- "{s.name}": {s.prompt}' for s in SECTIONS]
    return "Fields:\n" + "\n".join(lines)


def board_prompt(board: Board, new_messages: Sequence[SourceText], *, max_tokens: int) -> Messages:
    """Update the summary board with the messages that arrived since it was last updated."""
    current = board.texts_json()
    user = (
        "Update the summary board of a conversation with the new messages.\n\n"
        f"{_RULES.format(words=_words(max_tokens))}\n\n{_board_fields(_words(max_tokens))}\n\n"
        "Reply with a JSON object with exactly these fields; every list item is one string.\n\n"
        f"Current board:\n{json.dumps(current, ensure_ascii=False, indent=1)}\n\n"
        f"New messages:\n{transcript(new_messages)}"
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]
