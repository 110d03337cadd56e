"""What handlers share: the caller (401 unless the bearer credential is valid), the settings, and a
conversation named in the path."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import Depends, HTTPException, Path, Request

from memctx.api.gate import CHECKED
from memctx.api.schemas import ConversationName
from memctx.auth import Authenticator, Caller, Unauthorized, bearer
from memctx.config import Settings


def caller(request: Request) -> Caller:
    """The FastAPI dependency every /v1 route takes: 401 unless the credential is valid. A request
    with a body was authenticated by the gate already (api/gate.py): its user is taken from there."""
    authenticator: Authenticator = request.app.state.authenticator
    try:
        credential = bearer(request.headers.get("authorization"))
        checked = getattr(request.state, CHECKED, None)
        if checked is not None and checked[0] == credential:
            return authenticator.caller_of(checked[1])
        return authenticator.caller(credential)
    except Unauthorized:
        raise HTTPException(401, "invalid or missing credentials", headers={"WWW-Authenticate": "Bearer"}) from None


CallerDep = Annotated[Caller, Depends(caller)]
ConversationPath = Annotated[ConversationName, Path(description="the conversation's UUID or your external id")]


def settings(request: Request) -> Settings:
    return request.app.state.settings


SettingsDep = Annotated[Settings, Depends(settings)]


def conversation_id(who: Caller, name: str) -> UUID:
    """The caller's conversation named by UUID or external id; another tenant's is unknown (404)."""
    return who.app.store.find_conversation(who.user_id, name).id
