"""Domain objects shared by every layer: conversations, messages, summaries, boards.

Owns: the frozen dataclasses read from the database (`from_row`) and the validation of what a
caller may write (`NewMessage`). Objects never save themselves; `memctx.store` does that.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any, Literal, Mapping, Sequence
from uuid import UUID

ROLES = ("user", "assistant", "system", "tool", "agent", "observer")
Role = Literal["user", "assistant", "system", "tool", "agent", "observer"]
BLOCK_TYPES = ("text", "image", "tool_call", "tool_result", "thinking")
# The fields of each block type that hold text: a number or an object there is refused, not stored
# as its JSON text. (A tool call's arguments and a tool result's content may be any JSON.)
STRING_FIELDS = {"text": ("text",), "image": ("caption", "url"), "tool_call": ("id", "name"),
                 "tool_result": ("tool_call_id",), "thinking": ("text",)}


class InvalidInput(ValueError):
    """Input that memctx refuses; the message names the record and the reason."""

    def __init__(self, message: str, *, record: str | None = None) -> None:
        self.record = record
        super().__init__(f"{record}: {message}" if record else message)


def check_text(value: str, what: str, *, record: str | None = None) -> str:
    """Refuse text Postgres cannot store or that is not valid UTF-8."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, got {type(value).__name__}", record=record)
    if "\x00" in value:
        raise InvalidInput(f"{what} contains a NUL byte", record=record)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates from a bad decode
        raise InvalidInput(f"{what} is not valid UTF-8 ({exc.reason})", record=record) from None
    return value


# The dates a message may carry (migration 0018 checks the same): any time zone reads them as a
# date Python can hold.
EARLIEST_DATE = datetime(1000, 1, 1, tzinfo=timezone.utc)
LATEST_DATE = datetime(9000, 1, 1, tzinfo=timezone.utc)  # exclusive


def check_date(value: datetime, what: str = "created_at", *, record: str | None = None) -> datetime:
    """Refuse a message date outside the years 1000 to 8999 (a naive date is taken as UTC)."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    if not EARLIEST_DATE <= aware < LATEST_DATE:
        raise InvalidInput(f"{what} must be between the years 1000 and 8999, got {value.isoformat()}", record=record)
    return value


def check_query(value: str, what: str = "query") -> str:
    """A search or context query: storable text with at least one non-blank character. Every door
    (API, proxy, MCP, CLI) refuses the same queries."""
    check_text(value, what)
    if not value.strip():
        raise InvalidInput(f"{what} is empty: give the words to look for")
    return value


def blocks_from_content(content: str | Sequence[Mapping[str, Any]], *, record: str | None = None) -> list[dict[str, Any]]:
    """Normalize message content to a list of typed blocks.

    A plain string is one text block. Blocks: text {text}, image {url?, caption?},
    tool_call {name, arguments?, id?}, tool_result {content, tool_call_id?}, thinking {text}.
    """
    if isinstance(content, str):
        return [{"type": "text", "text": check_text(content, "text", record=record)}]
    if not isinstance(content, (list, tuple)) or not content:
        raise InvalidInput("content must be a string or a non-empty list of blocks", record=record)
    blocks = []
    for i, block in enumerate(content):
        if not isinstance(block, Mapping) or block.get("type") not in BLOCK_TYPES:
            kind = block.get("type") if isinstance(block, Mapping) else type(block).__name__
            raise InvalidInput(f"block {i} has unknown type {kind!r} (known: {', '.join(BLOCK_TYPES)})", record=record)
        clean = dict(block)
        for key in STRING_FIELDS[block["type"]]:
            value = block.get(key)
            if value is not None and not isinstance(value, str):
                raise InvalidInput(f"block {i} {key} must be a string, got {_json_type(value)}", record=record)
        for key, value in block.items():
            if isinstance(value, str):
                check_text(value, f"block {i} {key}", record=record)
        check_json(clean, f"block {i}", record)
        blocks.append(clean)
    return blocks


def check_json(value: Any, what: str, record: str | None = None) -> None:
    """Refuse JSON that Postgres's jsonb cannot store: NUL bytes or invalid UTF-8 in any string or
    key, NaN or Infinity in any number."""
    if isinstance(value, str):
        check_text(value, what, record=record)
    elif isinstance(value, float) and not math.isfinite(value):
        raise InvalidInput(f"{what} holds {value}, which is not valid JSON", record=record)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            check_text(str(k), f"{what} key", record=record)
            check_json(v, what, record)
    elif isinstance(value, (list, tuple)):
        for v in value:
            check_json(v, what, record)


def text_from_blocks(blocks: Sequence[Mapping[str, Any]]) -> str:
    """The plain text a message contributes to search and summaries.

    Text is kept, an image contributes its caption, a tool call its name and arguments, a tool
    result its content; thinking is private reasoning and is left out. The database derives the
    same text for rows inserted by plain SQL (`memctx.message_text`, migration 0005): change both.
    """
    parts: list[str] = []
    for block in blocks:
        kind = block["type"]
        if kind == "text":
            parts.append(_field_text(block.get("text"), ""))
        elif kind == "image":
            caption = _field_text(block.get("caption"), "")
            if caption:
                parts.append(f"[image: {caption}]")
        elif kind == "tool_call":
            parts.append(f"[tool call {_field_text(block.get('name'), '?')}({_field_text(block.get('arguments'), '{}')})]")
        elif kind == "tool_result":
            parts.append(_field_text(block.get("content"), ""))
    return "\n".join(p for p in parts if p).strip()


def _json_type(value: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", dict: "an object", list: "a list"}.get(
        type(value), type(value).__name__)


def _field_text(value: Any, missing: str) -> str:
    """A block field as text: a string as it is, None (or absent) as `missing`, anything else as
    Postgres prints it as jsonb, so that SQL-derived text is identical (`memctx.block_field_text`)."""
    if value is None:
        return missing
    return value if isinstance(value, str) else _jsonb_text(value)


def _jsonb_text(value: Any) -> str:
    """JSON as Postgres prints a jsonb value: object keys by length then bytes, numbers as numeric."""
    if isinstance(value, Mapping):
        items = sorted(((k if isinstance(k, str) else json.dumps(k), v) for k, v in value.items()),
                       key=lambda kv: (len(kv[0].encode()), kv[0].encode()))
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {_jsonb_text(v)}" for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_jsonb_text(v) for v in value) + "]"
    if isinstance(value, float):  # numeric prints 1e+16 in full and has no negative zero
        number = Decimal(repr(value))
        return format(abs(number) if number.is_zero() else number, "f")
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class NewMessage:
    """A message to append, validated before anything touches the database."""

    role: Role
    blocks: list[dict[str, Any]]
    text: str
    external_id: str | None = None
    created_at: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        role: str,
        content: str | Sequence[Mapping[str, Any]],
        *,
        external_id: str | None = None,
        created_at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        record: str | None = None,
    ) -> "NewMessage":
        if role not in ROLES:
            raise InvalidInput(f"unknown role {role!r} (known: {', '.join(ROLES)})", record=record)
        blocks = blocks_from_content(content, record=record)
        if external_id is not None:
            check_text(str(external_id), "external_id", record=record)
        if created_at is not None:
            check_date(created_at, record=record)
        meta = dict(metadata or {})
        check_json(meta, "metadata", record)
        text = text_from_blocks(blocks)
        return cls(role=role, blocks=blocks, text=text,  # type: ignore[arg-type]
                   external_id=None if external_id is None else str(external_id),
                   created_at=created_at, metadata=meta)


@dataclass(frozen=True)
class Conversation:
    id: UUID
    user_id: UUID
    external_id: str | None
    title: str | None
    metadata: dict[str, Any]
    message_count: int
    created_at: datetime
    last_message_at: datetime | None
    closed_at: datetime | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "Conversation":
        return cls(**{k: row[k] for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Message:
    id: UUID
    conversation_id: UUID
    user_id: UUID
    seq: int
    role: Role
    content: list[dict[str, Any]]
    text: str
    external_id: str | None
    token_count: int | None
    created_at: datetime
    metadata: dict[str, Any]
    has_embedding: bool = False

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "Message":
        return cls(**{k: row[k] for k in cls.__dataclass_fields__ if k in row})

    @property
    def speaker(self) -> str:
        """Who said it: the speaker name from metadata when known, else the role."""
        return str(self.metadata.get("speaker") or self.role)


@dataclass(frozen=True)
class Summary:
    id: UUID
    conversation_id: UUID
    user_id: UUID
    level: int
    is_master: bool
    content: str
    source_kind: Literal["message", "summary"]
    source_ids: list[UUID]
    first_seq: int
    last_seq: int
    token_count: int | None
    edited: bool
    superseded_by: UUID | None
    created_at: datetime

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "Summary":
        return cls(**{k: row[k] for k in cls.__dataclass_fields__})
