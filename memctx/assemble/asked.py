"""What a working-context call asks, and how the conversations its memories come from are named.

Owns: `Question` (the query as a chat message, the system prompt or none, the moment it is asked,
and their tokens with and without the line that says what day it is), `asked_at` (a call's
moment: the present unless given; naive is UTC), and `ConversationNames` (the title or external
id of the user's other conversations, read once per assembler). It assembles nothing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Sequence
from uuid import UUID

from psycopg_pool import ConnectionPool

from memctx.assemble.render import NO_LABELS, Labels, conversation_label, today_line
from memctx.retrieve.types import Memory
from memctx.sql import QUERIES
from memctx.tokens import REPLY_PRIMING, TokenCounter, messages_tokens

# Conversations whose names an assembler keeps (`ConversationNames`).
NAMES_KEPT = 10_000


def asked_at(now: datetime | None) -> datetime:
    """The moment a call is asked: `now`, UTC when naive; the present when None."""
    if now is None:
        return datetime.now(timezone.utc)
    return now if now.tzinfo is not None else now.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Question:
    """What a call asks: the query as a chat message, the system prompt ("" for none), the moment
    it is asked, and what they cost: `fixed` with the prompt as it is, `fixed_dated` with the line
    that says what day it is (`today_line`), which a context carrying memories adds to it."""

    ask: dict[str, str]
    prompt: str
    now: datetime
    fixed: int
    fixed_dated: int
    prompt_tokens: int  # the prompt as its own message (0: none): what a client's whole history carries too

    @classmethod
    def of(cls, counter: TokenCounter, query: str, prompt: str, now: datetime) -> "Question":
        ask = {"role": "user", "content": query}
        plain = _head(prompt, None)
        return cls(ask, prompt, now, messages_tokens(counter, [*plain, ask]),
                   messages_tokens(counter, [*_head(prompt, now.date()), ask]),
                   messages_tokens(counter, plain) - REPLY_PRIMING if plain else 0)

    def head(self, dated: bool) -> list[dict[str, str]]:
        """The system message (none, when there is neither a prompt nor the day to say)."""
        return _head(self.prompt, self.now.date() if dated else None)


def _head(prompt: str, today: date | None) -> list[dict[str, str]]:
    text = "\n".join([*([prompt] if prompt else []), *([today_line(today)] if today else [])])
    return [{"role": "system", "content": text}] if text else []


class ConversationNames:
    """How each of the user's other conversations is named in a context (`conversation_label`).
    A conversation's title and external id never change, so each is read once (one statement for
    those a context needs and this does not know yet; the last NAMES_KEPT read are kept). Safe to
    share between threads."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool
        self._known: OrderedDict[tuple[UUID, UUID], str] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, user: UUID, conversation: UUID, memories: Sequence[Memory]) -> Labels:
        """The names of the conversations of `memories` other than `conversation`, the one asked in."""
        others = {m.conversation_id for m in memories if m.conversation_id != conversation}
        if not others:
            return NO_LABELS
        with self._lock:
            known = {c: self._known.get((user, c)) for c in others}
        missing = [c for c, label in known.items() if label is None]
        if missing:
            with self.pool.connection() as conn:
                rows = conn.execute(QUERIES["conversation_labels"], {"user_id": user, "ids": missing}).fetchall()
            with self._lock:
                for row in rows:
                    known[row["id"]] = self._known[(user, row["id"])] = conversation_label(row["title"],
                                                                                            row["external_id"])
                while len(self._known) > NAMES_KEPT:
                    self._known.popitem(last=False)
        return {c.int: label for c, label in known.items() if label is not None}
