"""The working context for a new message, and memory search across the caller's conversations."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from fastapi import APIRouter

from memctx.api.deps import CallerDep, ConversationPath, SettingsDep, conversation_id
from memctx.api.errors import field_error
from memctx.api.observe import record_context
from memctx.api.schemas import ContextIn, SearchIn, TimeWindow
from memctx.assemble import assembler_for
from memctx.retrieve import search_memories
from memctx.retrieve.search import TimeRange, named_range

router = APIRouter(prefix="/v1", tags=["context"])


@router.post("/conversations/{conversation}/context")
def working_context(conversation: ConversationPath, body: ContextIn, who: CallerDep,
                    settings: SettingsDep) -> dict[str, Any]:
    """The WorkingContext for a new message within `token_budget` tokens, as `memctx context --json`
    prints it: `messages` to send to the model, and where every line came from (`sections`,
    `sources`), what was `dropped` or `compressed`, and `timings_ms`."""
    asked = body.as_of or datetime.now(timezone.utc)
    if body.token_budget > settings.api_max_token_budget:
        field_error(["body", "token_budget"], f"token_budget must be at most {settings.api_max_token_budget}")
    conv = conversation_id(who, conversation)
    assembler = assembler_for(who.app)
    options = assembler.options if body.scope is None else replace(assembler.options, scope=body.scope)
    wc = assembler.get_working_context(who.user_id, conv, body.query, body.token_budget,
                                       system_prompt=body.system_prompt, status_quo=body.status_quo or None,
                                       options=options, now=asked)
    record_context(who, conv, wc, "context")
    return wc.as_json()


@router.post("/search")
def search(body: SearchIn, who: CallerDep, settings: SettingsDep) -> dict[str, Any]:
    """Memories of the caller (messages and summaries with their neighbours), best first."""
    asked = body.as_of or datetime.now(timezone.utc)
    if body.limit > settings.api_max_page:
        field_error(["body", "limit"], f"limit must be at most {settings.api_max_page}")
    conv = conversation_id(who, body.conversation_id) if body.conversation_id is not None else None
    memories = search_memories(who.app, who.user_id, body.query, conv, time_range(body.time_range, asked),
                               limit=body.limit, now=asked)
    return {"memories": [m.as_json() for m in memories]}


def time_range(value: str | TimeWindow, now: datetime) -> TimeRange | None:
    if isinstance(value, TimeWindow):
        if value.since and value.until and value.since > value.until:
            field_error(["body", "time_range", "since"], "since is after until")
        return value.since, value.until
    return named_range(value, now)
