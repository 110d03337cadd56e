"""Bulk ingest of conversation files: LoCoMo JSON and memctx's generic JSONL.

Owns: parsing and validating a whole file before anything is written (bad input names its
record and changes nothing), then storing the whole file in one transaction with embeddings
computed in batches: an ingest stores everything or nothing. Re-running a file stores nothing
new: messages carry external ids.

Generic JSONL: one message per line, lines of a conversation in order::

    {"conversation": "support-42", "role": "user", "content": "Hi!", "id": "m1",
     "created_at": "2024-05-01T10:00:00Z", "metadata": {"speaker": "Ana"},
     "title": "optional, first line of a conversation", "user": "optional user uuid"}

`content` is a string or a list of typed blocks (text, image, tool_call, tool_result,
thinking) and must not be empty; `conversation` must not be empty; `id` defaults to the
message's position in its conversation (`#1`, `#2`, …) and is unique within a conversation.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator
from uuid import UUID

import numpy as np
import psycopg

from memctx.models import InvalidInput, NewMessage, check_text
from memctx.store.messages import MessageStore, PreparedMessage

_LOCOMO_SESSION = re.compile(r"^session_(\d+)$")


@dataclass(frozen=True)
class ConversationInput:
    """One conversation to ingest, checked on construction: a name, no empty message, no id twice."""

    external_id: str
    title: str | None
    metadata: dict[str, Any]
    messages: list[NewMessage]
    records: list[str]  # how errors name each message ("conv-26 D3:11", "line 12")
    user_id: UUID | None = None

    def __post_init__(self) -> None:
        if len(self.records) != len(self.messages):
            raise ValueError("ConversationInput needs one record per message")
        first_record = self.records[0] if self.records else None
        if not isinstance(self.external_id, str) or not self.external_id.strip():
            raise InvalidInput(f"conversation name {self.external_id!r} is empty", record=first_record)
        seen: dict[str, str] = {}
        for message, record in zip(self.messages, self.records):
            if _is_empty(message):
                raise InvalidInput("content is empty", record=record)
            if message.external_id is None:
                continue
            if message.external_id in seen:
                raise InvalidInput(f"id {message.external_id!r} appears twice in conversation {self.external_id!r} "
                                   f"(first at {seen[message.external_id]})", record=record)
            seen[message.external_id] = record


def _is_empty(message: NewMessage) -> bool:
    """No text and nothing but text blocks: an image, tool call or thinking block is content."""
    return not message.text.strip() and all(b["type"] == "text" for b in message.blocks)


@dataclass(frozen=True)
class IngestResult:
    conversation_id: UUID
    external_id: str
    messages: int  # newly stored
    skipped: int  # already stored
    def as_json(self) -> dict[str, Any]:
        return {"conversation_id": str(self.conversation_id), "external_id": self.external_id,
                "messages": self.messages, "skipped": self.skipped}


def read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InvalidInput(f"invalid UTF-8 at byte {exc.start}", record=f"{path.name} line {line}") from None


# LoCoMo -------------------------------------------------------------------------------------
def parse_locomo_date(value: str, record: str) -> datetime:
    """LoCoMo session dates look like '1:56 pm on 8 May, 2023'."""
    try:
        return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
    except (ValueError, AttributeError):
        raise InvalidInput(f"unparsable session date {value!r}", record=record) from None


def parse_locomo(text: str, source: str = "locomo") -> list[ConversationInput]:
    """speaker_a → user, speaker_b → assistant; dia_id is the external id; image captions kept."""
    try:
        samples = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", record=source) from None
    if not isinstance(samples, list):
        raise InvalidInput("a LoCoMo file is a JSON list of samples", record=source)
    return [_locomo_sample(s, i, source) for i, s in enumerate(samples)]


def _locomo_sample(sample: Any, index: int, source: str) -> ConversationInput:
    sid = sample.get("sample_id", f"sample {index}") if isinstance(sample, dict) else f"sample {index}"
    conv = sample.get("conversation") if isinstance(sample, dict) else None
    if not isinstance(conv, dict) or "speaker_a" not in conv or "speaker_b" not in conv:
        raise InvalidInput("missing conversation with speaker_a and speaker_b", record=f"{source} {sid}")
    roles = {conv["speaker_a"]: "user", conv["speaker_b"]: "assistant"}
    sessions = sorted((int(m.group(1)), key) for key in conv if (m := _LOCOMO_SESSION.match(key)))
    messages, records = [], []
    for number, key in sessions:
        start = parse_locomo_date(conv.get(f"{key}_date_time", ""), f"{sid} {key}")
        for i, turn in enumerate(conv[key]):
            record = f"{sid} {turn.get('dia_id', f'{key}[{i}]')}" if isinstance(turn, dict) else f"{sid} {key}[{i}]"
            messages.append(_locomo_turn(turn, roles, number, start + timedelta(seconds=10 * i), record))
            records.append(record)
    title = f"{conv['speaker_a']} & {conv['speaker_b']}"
    meta = {"source": "locomo", "speaker_a": conv["speaker_a"], "speaker_b": conv["speaker_b"],
            "sessions": {str(n): conv.get(f"session_{n}_date_time") for n, _ in sessions}}
    return ConversationInput(external_id=str(sid), title=title, metadata=meta, messages=messages, records=records)


def _locomo_turn(turn: Any, roles: dict[str, str], session: int, at: datetime, record: str) -> NewMessage:
    if not isinstance(turn, dict) or "text" not in turn or "dia_id" not in turn:
        raise InvalidInput("a turn needs speaker, dia_id and text", record=record)
    speaker = turn.get("speaker")
    if speaker not in roles:
        raise InvalidInput(f"speaker {speaker!r} is neither speaker_a nor speaker_b", record=record)
    blocks: list[dict[str, Any]] = [{"type": "text", "text": check_text(turn["text"], "text", record=record)}]
    if turn.get("blip_caption"):
        urls = turn.get("img_url") or [None]
        blocks.append({"type": "image", "url": urls[0], "caption": turn["blip_caption"]})
    return NewMessage.build(roles[speaker], blocks, external_id=turn["dia_id"], created_at=at,
                            metadata={"speaker": speaker, "session": session}, record=record)


# Generic JSONL ----------------------------------------------------------------------------------
def parse_jsonl(text: str, source: str = "jsonl") -> list[ConversationInput]:
    grouped: dict[str, dict[str, Any]] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        record = f"{source} line {lineno}"
        try:
            obj = json.loads(line, parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"malformed JSON: {exc.msg} (column {exc.colno})", record=record) from None
        except ValueError as exc:
            raise InvalidInput(str(exc), record=record) from None
        if not isinstance(obj, dict) or "conversation" not in obj or "role" not in obj or "content" not in obj:
            raise InvalidInput("each line needs conversation, role and content", record=record)
        name = obj["conversation"]
        if isinstance(name, bool) or not isinstance(name, (str, int)) or not str(name).strip():
            raise InvalidInput(f"conversation {name!r} is empty or not a name", record=record)
        conv_id = check_text(str(name), "conversation", record=record)
        if obj.get("title") is not None:
            check_text(obj["title"], "title", record=record)
        group = grouped.setdefault(conv_id, {"messages": [], "records": [], "title": obj.get("title"),
                                             "user": _user(obj.get("user"), record)})
        position = len(group["messages"]) + 1
        message_id = obj.get("id")
        external_id = f"#{position}" if message_id in (None, "") else str(message_id)
        group["messages"].append(NewMessage.build(
            str(obj["role"]), obj["content"], external_id=external_id,
            created_at=_timestamp(obj.get("created_at"), record), metadata=obj.get("metadata") or {}, record=record))
        group["records"].append(record)
    return [ConversationInput(external_id=k, title=g["title"], metadata={"source": "jsonl"}, messages=g["messages"],
                              records=g["records"], user_id=g["user"]) for k, g in grouped.items()]


def _no_constant(name: str) -> Any:
    """NaN and Infinity are not JSON; Python reads them, Postgres refuses them in jsonb."""
    raise ValueError(f"{name} is not valid JSON")


def _user(value: Any, record: str) -> UUID | None:
    if value is None:
        return None
    try:
        return UUID(str(value))
    except ValueError:
        raise InvalidInput(f"user {value!r} is not a UUID", record=record) from None


def _timestamp(value: Any, record: str) -> datetime | None:
    if value is None:
        return None
    try:
        ts = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"created_at {value!r} is not an ISO 8601 timestamp", record=record) from None
    return ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)


PARSERS: dict[str, Callable[[str, str], list[ConversationInput]]] = {"locomo": parse_locomo, "jsonl": parse_jsonl}


def load_file(path: Path, fmt: str) -> list[ConversationInput]:
    if fmt not in PARSERS:
        raise InvalidInput(f"unknown format {fmt!r} (known: {', '.join(PARSERS)})")
    return PARSERS[fmt](read_text(path), path.name)


# Storing ------------------------------------------------------------------------------------------
def ingest(store: MessageStore, conversations: Iterable[ConversationInput], user_id: UUID,
           *, on_embedded: Callable[[int], None] | None = None, group_size: int = 512) -> list[IngestResult]:
    """Store conversations in one transaction: everything is stored, or nothing is.

    Everything is validated first (tokens included). Then, in one transaction, each conversation
    is created (or found) and its already stored ids are read; new messages are taken in groups
    of at least `group_size` (bounded embedding batches), each embedded in one length-sorted pass,
    which pads least, while a writer thread appends the previous group on the same connection. On
    two cores that overlap gains little (docs/BENCHMARKS.md): the embedder already uses both. Any
    error rolls the whole ingest back; a re-run after success stores nothing new.
    """
    conversations = list(conversations)
    prepared = [store.prepare(c.messages, records=c.records) for c in conversations]
    with store.pool.connection() as conn, conn.transaction():
        plans = [_plan(store, conn, conv, msgs, user_id) for conv, msgs in zip(conversations, prepared)]
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="memctx-ingest") as writer:
            writes: list[Future] = []
            try:
                for group in _groups(plans, group_size):
                    vectors = _embed(store, [m.message.text for p in group for m in p.new], on_embedded)
                    _raise_failed(writes)
                    writes.append(writer.submit(_write_group, store, conn, group, vectors))
                return [result for w in writes for result in w.result()]
            except BaseException:
                for write in writes:
                    write.cancel()
                raise


def _groups(plans: list[_Pending], size: int) -> Iterator[list[_Pending]]:
    """Consecutive conversations holding at least `size` new messages (the last group: the rest)."""
    group: list[_Pending] = []
    for plan in plans:
        group.append(plan)
        if sum(len(p.new) for p in group) >= size:
            yield group
            group = []
    if group or not plans:
        yield group


def _raise_failed(writes: list[Future]) -> None:
    for write in writes:
        if write.done() and write.exception() is not None:
            raise write.exception()  # type: ignore[misc]


@dataclass
class _Pending:
    external_id: str
    owner: UUID
    conversation_id: UUID
    total: int
    new: list[PreparedMessage]


def _plan(store: MessageStore, conn: psycopg.Connection, conv: ConversationInput, msgs: list[PreparedMessage],
          user_id: UUID) -> _Pending:
    owner = conv.user_id or user_id
    stored = store.create_conversation(owner, external_id=conv.external_id, title=conv.title,
                                       metadata=conv.metadata, conn=conn)
    known = store.stored_external_ids(owner, stored.id, [m.message.external_id for m in msgs], conn=conn)
    return _Pending(conv.external_id, owner, stored.id, len(msgs),
                    [m for m in msgs if m.message.external_id not in known])


def _write_group(store: MessageStore, conn: psycopg.Connection, group: list[_Pending],
                 vectors: np.ndarray | None) -> list[IngestResult]:
    results, offset = [], 0
    for p in group:
        part = vectors[offset:offset + len(p.new)] if vectors is not None else None
        offset += len(p.new)
        written = store.append_messages(p.owner, p.conversation_id, p.new, embeddings=part, conn=conn) if p.new else []
        results.append(IngestResult(p.conversation_id, p.external_id, len(written), p.total - len(written)))
    return results


def _embed(store: MessageStore, texts: list[str], on_embedded: Callable[[int], None] | None) -> np.ndarray | None:
    """Embed in length order, in chunks (for progress), and return vectors in input order."""
    if store.embedder is None or not texts:
        return None
    order = np.argsort([len(t) for t in texts], kind="stable")
    out = np.empty((len(texts), store.embedder.dim), dtype=np.float32)
    step = 512
    for start in range(0, len(order), step):
        idx = order[start:start + step]
        out[idx] = store.embedder.embed([texts[i] for i in idx])
        if on_embedded:
            on_embedded(len(idx))
    return out
