"""Conversations: create (get-or-create by external id), list (paged), get, delete, and the
proxy's mode for one conversation (live or shadow)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from memctx.api.deps import CallerDep, ConversationPath, SettingsDep, conversation_id
from memctx.api.errors import field_error
from memctx.api.schemas import ConversationIn, ConversationOut, ConversationPage, ProxyModeIn, ProxyModeOut
from memctx.store import shadow

router = APIRouter(prefix="/v1/conversations", tags=["conversations"])


@router.post("", status_code=201, response_model=ConversationOut)
def create_conversation(body: ConversationIn, who: CallerDep) -> ConversationOut:
    """Create a conversation; with an `external_id` you already used, the existing one is returned."""
    conv = who.app.store.create_conversation(who.user_id, external_id=body.external_id, title=body.title,
                                             metadata=body.metadata)
    return ConversationOut.model_validate(conv)


@router.get("", response_model=ConversationPage)
def list_conversations(who: CallerDep, settings: SettingsDep, limit: Annotated[int, Query(ge=1)] = 100,
                       offset: Annotated[int, Query(ge=0, le=2**31)] = 0) -> ConversationPage:
    """The caller's conversations, most recently active first."""
    if limit > settings.api_max_page:
        field_error(["query", "limit"], f"limit must be at most {settings.api_max_page}")
    convs = who.app.store.list_conversations(who.user_id, limit=limit + 1, offset=offset)
    return ConversationPage(items=[ConversationOut.model_validate(c) for c in convs[:limit]],
                            next_offset=offset + limit if len(convs) > limit else None)


@router.get("/{conversation}", response_model=ConversationOut)
def get_conversation(conversation: ConversationPath, who: CallerDep) -> ConversationOut:
    return ConversationOut.model_validate(who.app.store.find_conversation(who.user_id, conversation))


@router.delete("/{conversation}", status_code=204)
def delete_conversation(conversation: ConversationPath, who: CallerDep) -> Response:
    """Delete a conversation and everything derived from it."""
    who.app.store.delete_conversation(who.user_id, conversation_id(who, conversation))
    return Response(status_code=204)


@router.get("/{conversation}/proxy-mode", response_model=ProxyModeOut)
def get_proxy_mode(conversation: ConversationPath, who: CallerDep, settings: SettingsDep) -> ProxyModeOut:
    """The proxy's mode for this conversation: its own, and the one its requests run in."""
    mode = shadow.proxy_mode(who.app.pool, who.user_id, conversation_id(who, conversation))
    return ProxyModeOut(mode=mode, effective=mode or settings.proxy_mode)


@router.put("/{conversation}/proxy-mode", response_model=ProxyModeOut)
def set_proxy_mode(conversation: ConversationPath, body: ProxyModeIn, who: CallerDep,
                   settings: SettingsDep) -> ProxyModeOut:
    """Switch the conversation between shadow and live (null: follow the server). A request's
    X-Memctx-Mode header still decides for itself. Its history is stored in both modes, so a
    conversation switched to live has its memory already."""
    mode = shadow.set_proxy_mode(who.app.pool, who.user_id, conversation_id(who, conversation), body.mode)
    return ProxyModeOut(mode=mode, effective=mode or settings.proxy_mode)
