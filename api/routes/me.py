"""The caller: who the credential says it is, and forgetting everything of it."""

from __future__ import annotations

from fastapi import APIRouter

from memctx.api.deps import CallerDep

router = APIRouter(prefix="/v1/me", tags=["me"])


@router.get("")
def me(who: CallerDep) -> dict[str, str]:
    return {"user_id": str(who.user_id)}


@router.delete("")
def forget_me(who: CallerDep) -> dict[str, int]:
    """Delete every row of the caller in every table (API keys included), verified empty, in one
    transaction. Returns the rows deleted per table."""
    return who.app.store.forget_user(who.user_id)
