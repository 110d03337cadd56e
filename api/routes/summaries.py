"""Summaries and long-term memory: the board, the live chain, summarize now (or regenerate), edit a
summary, close a conversation, and the continuity note for a new one."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, HTTPException, Query

from memctx.api.deps import CallerDep, ConversationPath, conversation_id
from memctx.api.schemas import ConversationName, SummaryEditIn, SummaryOut
from memctx.pipeline import catchup, longterm
from memctx.pipeline.board import get_board

router = APIRouter(prefix="/v1", tags=["summaries"])


@router.get("/conversations/{conversation}/board")
def board(conversation: ConversationPath, who: CallerDep) -> dict[str, Any] | None:
    """The summary board as `memctx board --json` prints it: the running summary and every item
    (key facts, entities, topics, action items, pending questions, constraints) with the messages it
    came from; null until the worker (or summarize) has built one."""
    found = get_board(who.app, who.user_id, conversation_id(who, conversation))
    return found.view_json() if found else None


@router.get("/conversations/{conversation}/chain")
def chain(conversation: ConversationPath, who: CallerDep) -> dict[str, Any]:
    """The live chain that replaces the full history: master, summaries high to low, recent messages."""
    items = catchup.live_chain(who.app, who.user_id, conversation_id(who, conversation))
    return {"items": [c.as_json() for c in items]}


@router.post("/conversations/{conversation}/summarize")
def summarize(conversation: ConversationPath, who: CallerDep,
              regenerate: Annotated[bool, Query(description="discard every summary (edited ones too) and "
                                                            "the board, and rebuild them")] = False
              ) -> dict[str, Any]:
    """Do the conversation's pending summarization now, the board's incomplete tail included."""
    conv = conversation_id(who, conversation)
    result = (catchup.regenerate(who.app, who.user_id, conv) if regenerate
              else catchup.catch_up(who.app, who.user_id, conv, force_board=True))
    return result.as_json()


@router.put("/summaries/{summary_id}", response_model=SummaryOut)
def edit_summary(summary_id: UUID, body: SummaryEditIn, who: CallerDep) -> SummaryOut:
    """Replace a live summary's text: kept as written (marked edited) until a regeneration."""
    try:
        return SummaryOut.model_validate(catchup.edit_summary(who.app, who.user_id, summary_id, body.text))
    except LookupError:
        raise HTTPException(404, "summary not found") from None


@router.post("/conversations/{conversation}/close")
def close(conversation: ConversationPath, who: CallerDep) -> dict[str, Any]:
    """Close the conversation now: catch up and write its long-term summary."""
    summary = longterm.close_conversation(who.app, who.user_id, conversation_id(who, conversation), explicit=True)
    return summary.as_json()


@router.get("/continuity")
def continuity(who: CallerDep, current: Annotated[ConversationName | None, Query(
        description="the new conversation (left out of the note): UUID or external id")] = None
               ) -> dict[str, Any] | None:
    """The continuity note for the caller's new conversation: the last closed or idle conversation's
    summary, open questions and action items; null when there is none yet."""
    current_id = conversation_id(who, current) if current is not None else None
    note = longterm.continuity_note(who.app, who.user_id, current_conversation_id=current_id)
    return note.as_json() if note else None
