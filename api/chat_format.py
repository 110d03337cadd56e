"""The OpenAI chat-completions format at the proxy's edge, and memctx's typed blocks.

Owns: the request models the proxy validates (unknown fields pass through to the upstream), which
messages of a request are already stored (`unstored`) and which are the in-flight tool loop (sent
as they are),
OpenAI messages and replies as memctx messages (text, image, tool_call and tool_result blocks),
the reply assembled from a stream's chunks, and a stored reply replayed as a stream. Pure: no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterator, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from memctx.models import InvalidInput, NewMessage

# Roles whose messages are instructions, not conversation: they set the system prompt.
INSTRUCTION_ROLES = ("system", "developer")


class FunctionCall(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    arguments: str = ""


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    type: str = "function"
    function: FunctionCall


class ChatMessage(BaseModel):
    """One message of a chat-completions request; content is a string or a list of parts."""

    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class ChatRequest(BaseModel):
    """A chat-completions request. Every field besides these goes to the upstream untouched."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1, max_length=256)
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool | None = None
    metadata: dict[str, Any] | None = Field(
        default=None, description="`memctx_conversation` names the conversation (or the X-Memctx-Conversation "
                                  "header does); the rest goes to the upstream")


@dataclass(frozen=True)
class Turn:
    """What a request means to memctx: the conversation's messages as the client sent them (its
    history, the query, the in-flight tool loop), the query to build the context for, the caller's
    system prompt, and the tool loop after the last user message."""

    system_prompt: str | None
    query: dict[str, Any]  # the last user message, as the caller sent it
    query_text: str
    talk: list[dict[str, Any]]  # every message but the instructions, in order
    query_index: int  # the query's place in `talk`
    tail: list[dict[str, Any]] = field(default_factory=list)


def split_turn(messages: Sequence[Mapping[str, Any]]) -> Turn:
    """Split a request's messages (dicts as the caller sent them, validated by `ChatMessage`).

    Messages after the last user message (an assistant's tool calls and their results) are the
    tool loop, which the upstream needs as it is. Which messages are new to memctx is not decided
    here but against what is stored (`unstored`)."""
    instructions = [text_of(m.get("content")) for m in messages if m["role"] in INSTRUCTION_ROLES]
    talk = [dict(m) for m in messages if m["role"] not in INSTRUCTION_ROLES]
    users = [i for i, m in enumerate(talk) if m["role"] == "user"]
    if not users:
        raise InvalidInput("messages: at least one message must have role 'user'")
    last_user = users[-1]
    query_text = text_of(talk[last_user].get("content"))
    if not query_text.strip():
        raise InvalidInput("messages: the last user message has no text")
    return Turn(system_prompt="\n\n".join(i for i in instructions if i) or None, query=talk[last_user],
                query_text=query_text, talk=talk, query_index=last_user, tail=talk[last_user + 1:])


@dataclass(frozen=True)
class Alignment:
    """How a request's messages line up with the conversation's last stored ones."""

    first_new: int  # sent[first_new:] are not stored; the earlier ones are
    offset: int | None = None  # sent[i] is stored[i + offset] (None: nothing lines up)

    def stored_index(self, i: int) -> int | None:
        return None if self.offset is None else i + self.offset


def message_key(role: str, blocks: Sequence[Mapping[str, Any]]) -> str:
    """What makes two messages the same turn: role and content blocks."""
    return json.dumps([role, list(blocks)], sort_keys=True, default=str)


def unstored(sent: Sequence[str], stored: Sequence[str]) -> Alignment:
    """Which of a request's messages (`message_key`s, in order) the conversation holds, given its
    last stored messages (keys, oldest first; at least as many as were sent, when there are).

    The anchor is the latest sent message that equals a stored one which has no more stored
    messages after it than the request has after it: the stored messages after the anchor are
    the client's next ones (even if the client changed their text: memory is what was stored),
    and whatever the client sent past them is new. So a retried request (the same last message,
    no reply stored after it) stores nothing; a client that sends only its new message stores it,
    even if it said the same thing before (a reply was stored after that one); a client that
    sends a history memctx never saw stores all of it, in order; a client whose history lacks what
    another device added since stores only its own new messages."""
    positions: dict[str, list[int]] = {}
    for j, key in enumerate(stored):
        positions.setdefault(key, []).append(j)
    for i in range(len(sent) - 1, -1, -1):
        after_sent = len(sent) - 1 - i
        for j in reversed(positions.get(sent[i], [])):
            after_stored = len(stored) - 1 - j
            if after_stored <= after_sent:
                return Alignment(first_new=i + 1 + after_stored, offset=j - i)
    # The conversation holds more after the client's history than the client has seen (another
    # device or door added to it): the longest run of the request's first messages that is stored
    # as it is (two at least, and not the last message: one alone may be said again) is known, the
    # rest is new.
    for i in range(len(sent) - 2, 0, -1):
        for j in reversed(positions.get(sent[i], [])):
            if j >= i and list(stored[j - i:j + 1]) == list(sent[:i + 1]):
                return Alignment(first_new=i + 1, offset=j - i)
    return Alignment(first_new=0)


def text_of(content: Any) -> str:
    """The text of OpenAI message content: a string, or its text parts joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text", "")) for p in content if p.get("type") == "text")


def to_new_message(message: Mapping[str, Any]) -> NewMessage:
    """An OpenAI message as a memctx message: text and image parts, tool calls, a tool result."""
    role = message["role"]
    content = message.get("content")
    blocks: list[dict[str, Any]] = []
    if role == "tool":
        blocks.append({"type": "tool_result", "content": text_of(content),
                       **({"tool_call_id": message["tool_call_id"]} if message.get("tool_call_id") else {})})
    elif isinstance(content, str):
        if content:
            blocks.append({"type": "text", "text": content})
    elif content:
        for part in content:
            if part.get("type") == "text":
                blocks.append({"type": "text", "text": str(part.get("text", ""))})
            elif part.get("type") == "image_url":
                image = part.get("image_url")
                url = image.get("url") if isinstance(image, Mapping) else image
                blocks.append({"type": "image", "url": str(url) if url is not None else None})
    blocks += tool_call_blocks(message.get("tool_calls") or [])
    if not blocks:
        blocks.append({"type": "text", "text": ""})
    metadata = {"name": message["name"]} if message.get("name") else {}
    return NewMessage.build(role, blocks, metadata=metadata, record=f"{role} message")


def tool_call_blocks(tool_calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI tool calls as memctx tool_call blocks (arguments kept as the JSON text sent)."""
    out = []
    for call in tool_calls:
        function = call.get("function") or {}
        out.append({"type": "tool_call", "id": call.get("id"), "name": function.get("name"),
                    "arguments": function.get("arguments") or ""})
    return out


def reply_message(completion: Mapping[str, Any]) -> NewMessage | None:
    """The first choice of a completion as the assistant's memctx message (None without one)."""
    choices = completion.get("choices") or []
    if not choices or not isinstance(choices[0].get("message"), Mapping):
        return None
    message = dict(choices[0]["message"])
    message["role"] = "assistant"
    return to_new_message(message)


class StreamReply:
    """Assembles a streamed completion from its SSE bytes, as they pass through unchanged."""

    def __init__(self) -> None:
        self._buffer = b""
        self.done = False
        self.meta: dict[str, Any] = {}
        self.content: list[str] = []
        self.tool_calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None

    def feed(self, data: bytes) -> None:
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            self._line(line.strip())

    def _line(self, line: bytes) -> None:
        if not line.startswith(b"data:"):
            return
        payload = line[5:].strip()
        if payload == b"[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(payload)
        except ValueError:
            return
        if not isinstance(chunk, dict):
            return
        for key in ("id", "created", "model", "system_fingerprint"):
            if key in chunk:
                self.meta[key] = chunk[key]
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if delta.get("content"):
                self.content.append(delta["content"])
            for call in delta.get("tool_calls") or []:
                slot = self.tool_calls.setdefault(call.get("index", 0), {"id": None, "type": "function",
                                                                         "function": {"name": "", "arguments": ""}})
                slot["id"] = call.get("id") or slot["id"]
                function = call.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]

    def completion(self) -> dict[str, Any]:
        """The stream as one non-streamed completion (what an Idempotency-Key retry gets back)."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        if self.tool_calls:
            message["tool_calls"] = [self.tool_calls[i] for i in sorted(self.tool_calls)]
        return {"id": self.meta.get("id"), "object": "chat.completion", "created": self.meta.get("created"),
                "model": self.meta.get("model"), "choices": [{"index": 0, "message": message,
                                                              "finish_reason": self.finish_reason}],
                **({"usage": self.usage} if self.usage else {})}


def completion_as_stream(completion: Mapping[str, Any]) -> Iterator[bytes]:
    """A stored completion replayed as chat.completion.chunk events: the message, then [DONE]."""
    head = {k: completion.get(k) for k in ("id", "created", "model")}
    for choice in completion.get("choices") or []:
        message = choice.get("message") or {}
        delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
        chunk = {**head, "object": "chat.completion.chunk",
                 "choices": [{"index": choice.get("index", 0), "delta": delta,
                              "finish_reason": choice.get("finish_reason")}]}
        yield b"data: " + json.dumps(chunk).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"
