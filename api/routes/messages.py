"""Messages: append a batch (the JSONL format's messages, validated as ingest validates them, stored
in one transaction: all of the batch or none of it), and list them paged by seq."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from memctx.api.deps import CallerDep, ConversationPath, SettingsDep, conversation_id
from memctx.api.errors import field_error
from memctx.api.schemas import MAX_SEQ, MessageOut, MessagePage, MessagesIn, MessagesOut
from memctx.models import NewMessage
from memctx.store.ingest import ConversationInput

router = APIRouter(prefix="/v1/conversations/{conversation}/messages", tags=["messages"])


@router.post("", status_code=201, response_model=MessagesOut)
def append_messages(conversation: ConversationPath, body: MessagesIn, who: CallerDep,
                    settings: SettingsDep) -> MessagesOut:
    """Append messages in order, in one transaction. Messages whose `id` the conversation already
    holds are skipped (a retried request stores nothing twice); the answer lists those stored now.
    The worker embeds them after the answer (MEMCTX_APPEND_EMBEDDING=request: before it)."""
    if len(body.messages) > settings.api_max_batch_messages:
        field_error(["body", "messages"], f"at most {settings.api_max_batch_messages} messages per request")
    records = [f"messages[{i}]" for i in range(len(body.messages))]
    batch = ConversationInput(external_id=conversation, title=None, metadata={}, records=records, messages=[
        NewMessage.build(m.role, m.content, external_id=m.id, created_at=m.created_at, metadata=m.metadata,
                         record=record) for m, record in zip(body.messages, records)])
    prepared = who.app.store.prepare(batch.messages, records=records)
    stored = who.app.store.append_messages(who.user_id, conversation_id(who, conversation), prepared,
                                           embed=settings.append_embedding == "request")
    return MessagesOut(messages=[MessageOut.model_validate(m) for m in stored])


@router.get("", response_model=MessagePage)
def list_messages(conversation: ConversationPath, who: CallerDep, settings: SettingsDep,
                  after_seq: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
                  limit: Annotated[int, Query(ge=1)] = 100) -> MessagePage:
    """A page of messages in seq order, after `after_seq`."""
    if limit > settings.api_max_page:
        field_error(["query", "limit"], f"limit must be at most {settings.api_max_page}")
    rows = who.app.store.list_messages(who.user_id, conversation_id(who, conversation), after_seq=after_seq,
                                       limit=limit + 1)
    page = rows[:limit]
    return MessagePage(items=[MessageOut.model_validate(m) for m in page],
                       next_after_seq=page[-1].seq if len(rows) > limit else None)
