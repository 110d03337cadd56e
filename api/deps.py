"""What handlers share: the caller, the settings, and a conversation named in the path."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import Depends, Path, Request

from api.auth import Caller, caller
from api.schemas import ConversationName
from memctx.config import Settings

CallerDep = Annotated[Caller, Depends(caller)]
ConversationPath = Annotated[ConversationName, Path(description="the conversation's UUID or your external id")]


def settings(request: Request) -> Settings:
    return request.app.state.settings


SettingsDep = Annotated[Settings, Depends(settings)]


def conversation_id(who: Caller, name: str) -> UUID:
    """The caller's conversation named by UUID or external id; another tenant's is unknown (404)."""
    return who.app.store.find_conversation(who.user_id, name).id
