"""Procedures from an agent's tool calls: a tool's error, and the later call of it that worked. Pure.

Owns: reading tool calls and their results from messages' typed blocks (`tool_call` {name,
arguments, id}, `tool_result` {content, tool_call_id, is_error?}), telling an error from a
success, making an error's signature (its first line with numbers, quoted values and ids made
generic, so that "file 'a.csv' not found" and "file 'b.csv' not found" are one error), and
pairing: the first failing call of a tool opens an episode, the next successful call of the same
tool closes it with what worked (that call's arguments). Each episode is a `ProcedureCandidate`:
the pipeline counts episodes per (tool, error) and those that ended in a success, so a
procedure's success rate is resolved episodes over episodes. `errors_in` finds the errors of
recent turns as text, so a context can bring what worked when the same error comes up again.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping, Sequence

from memctx.learn.types import ProcedureCandidate, Said

MAX_ERROR = 200
MAX_FIX = 500

_ERROR = re.compile(
    r"\b(?:error|errors|exception|traceback|failed|failure|fails|invalid|not\s+found|no\s+such|denied|forbidden|"
    r"unauthori[sz]ed|refused|timed?\s*out|timeout|cannot|can't|could\s+not|unable\s+to|missing\s+required|"
    r"bad\s+request|unknown\s+\w+|rate\s+limit(?:ed)?|exceeded)\b|^\s*(?:4\d\d|5\d\d)\b",
    re.IGNORECASE)
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_IDS = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b0x[0-9a-f]+\b|\b[0-9a-f]{12,}\b",
                  re.IGNORECASE)
_NUMBERS = re.compile(r"\d+(?:[.,:]\d+)*")
_CALL_TEXT = re.compile(r"\[tool call ([^\s(\]]+)\(")


def is_error(result: Mapping[str, Any]) -> bool:
    """A tool result that reports a failure: flagged so (`is_error`, `error`), or saying so in
    its first 300 characters."""
    if result.get("is_error") is True or result.get("error"):
        return True
    return bool(_ERROR.search(_content_text(result.get("content"))[:300]))


def signature(text: str) -> str:
    """An error as a signature: its first non-empty line, lower case, quoted values, ids and
    numbers made generic ("…", "#"), spaces collapsed, at most MAX_ERROR characters."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = _IDS.sub("…", _QUOTED.sub("…", line))
    line = _NUMBERS.sub("#", line.lower())
    return " ".join(line.split())[:MAX_ERROR] or "error"


def arguments_text(arguments: Any) -> str:
    """A call's arguments as the tool was called: JSON with sorted keys (text as it came)."""
    if arguments is None:
        return "{}"
    if isinstance(arguments, str):
        return arguments[:MAX_FIX]
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False)[:MAX_FIX]


def episodes(messages: Sequence[Said]) -> list[ProcedureCandidate]:
    """Every tool error episode in `messages` (in order), closed by a later successful call of the
    same tool where one came (`fix`), else open (`fix` None)."""
    calls: dict[str, tuple[str, Any, Said]] = {}  # call id → (tool, arguments, the message calling)
    last_call: tuple[str, Any, Said] | None = None
    open_: dict[str, tuple[str, Said]] = {}  # tool → (signature, message of its first error)
    out: list[ProcedureCandidate] = []
    for message in sorted(messages, key=lambda m: m.seq):
        for block in message.blocks:
            kind = block.get("type")
            if kind == "tool_call" and block.get("name"):
                last_call = (str(block["name"]), block.get("arguments"), message)
                if block.get("id"):
                    calls[str(block["id"])] = last_call
            elif kind == "tool_result":
                call = calls.get(str(block.get("tool_call_id"))) if block.get("tool_call_id") else None
                call = call or last_call
                if call is None:
                    continue
                tool, arguments, caller = call
                if is_error(block):
                    if tool not in open_:
                        open_[tool] = (signature(_content_text(block.get("content"))), message)
                elif tool in open_:
                    error, first = open_.pop(tool)
                    out.append(ProcedureCandidate(tool, error, arguments_text(arguments), first, caller))
    out += [ProcedureCandidate(tool, error, None, first) for tool, (error, first) in open_.items()]
    return sorted(out, key=lambda p: p.error_message.seq)


def errors_in(turns: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The (tool, signature) of each tool error among recent turns read as text (role, content,
    in order): a tool turn that reads as an error, named by the call before it."""
    found, tool = [], None
    for turn in turns:
        text = str(turn.get("content") or "")
        call = _CALL_TEXT.findall(text)
        if call:
            tool = call[-1]
        if turn.get("role") == "tool" and tool and _ERROR.search(text[:300]):
            found.append((tool, signature(text)))
    return found


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
