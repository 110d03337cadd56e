"""What memctx learned about the caller, seen, corrected and forgotten by them; and their ratings of
what a context brought."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import APIRouter, HTTPException, Query

from memctx.api.deps import CallerDep, SettingsDep
from memctx.api.errors import field_error
from memctx.api.schemas import FeedbackIn, ProfileEditIn, ProfileItemIn
from memctx.pipeline import profile

router = APIRouter(prefix="/v1", tags=["profile"])

Status = Literal["active", "replaced", "deleted", "all"]


@router.get("/me/profile")
def list_profile(who: CallerDep, settings: SettingsDep,
                 status: Annotated[Status, Query(description="active (the default), replaced (history), "
                                                           "deleted (tombstones) or all")] = "active",
                 person: Annotated[str | None, Query(max_length=200, description="only the items of this person "
                                                     "(a speaker's name, or `user`)")] = None,
                 limit: Annotated[int, Query(ge=1)] = 500) -> dict[str, Any]:
    """Your profile: each item with its kind, person, subject, topic, value, confidence, how often
    it was seen and overridden, first and last seen, what replaced it, and the messages it was
    learned from."""
    if limit > settings.api_max_page:
        field_error(["query", "limit"], f"limit must be at most {settings.api_max_page}")
    items = profile.list_profile(who.app, who.user_id, status=None if status == "all" else status, person=person,
                                 limit=limit)
    return {"items": [i.as_json() for i in items]}


@router.post("/me/profile", status_code=201)
def add_item(body: ProfileItemIn, who: CallerDep) -> dict[str, Any]:
    """Add an item in your own words (an `instruction` such as "always answer in metric units" is in
    every context from then on). It has no source message, so it is never forgotten with one."""
    return profile.add_item(who.app, who.user_id, body.value, kind=body.kind, person=body.person).as_json()


@router.get("/me/profile/{item_id}")
def get_item(item_id: UUID, who: CallerDep) -> dict[str, Any]:
    return _found(lambda: profile.get_item(who.app, who.user_id, item_id)).as_json()


@router.patch("/me/profile/{item_id}")
def edit_item(item_id: UUID, body: ProfileEditIn, who: CallerDep) -> dict[str, Any]:
    """Correct an item: your words are kept, also when its messages are learned from again."""
    return _found(lambda: profile.edit_item(who.app, who.user_id, item_id, body.value)).as_json()


@router.delete("/me/profile/{item_id}")
def delete_item(item_id: UUID, who: CallerDep) -> dict[str, Any]:
    """Delete an item: it leaves every context and is never learned again (a tombstone, listed
    with `status=deleted`). Forgetting its conversations forgets it entirely."""
    return _found(lambda: profile.delete_item(who.app, who.user_id, item_id)).as_json()


@router.get("/me/procedures")
def procedures(who: CallerDep, limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict[str, Any]:
    """What worked after your agents' tool errors: each tool's error, the later call that
    succeeded, how often the error was seen and how often a later call resolved it, with sources."""
    return {"procedures": [p.as_json() for p in profile.procedures(who.app, who.user_id, limit=limit)]}


@router.post("/feedback", status_code=201)
def rate(body: FeedbackIn, who: CallerDep) -> dict[str, Any]:
    """Rate what a context brought: a profile item, a memory (message or summary, by the id
    `sources` gives) or a procedure, as `useful`, `wrong` or `outdated`. `wrong` deletes a profile
    item for good, `outdated` marks it replaced, `useful` raises it (or the memory) in your later
    contexts, within a bound. Every rating is kept, with who gave it and when (`GET /v1/me/feedback`)."""
    stored = _found(lambda: profile.rate(who.app, who.user_id, body.kind, body.id, body.rating, via="api",
                                         rated_by=str(who.user_id), note=body.note))
    return stored.as_json()


@router.get("/me/feedback")
def ratings(who: CallerDep, limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict[str, Any]:
    """Your ratings, newest first, each with what it rated."""
    return {"ratings": [r.as_json() for r in profile.ratings(who.app, who.user_id, limit=limit)]}


def _found(call: Any) -> Any:
    try:
        return call()
    except LookupError as exc:
        raise HTTPException(404, str(exc)) from None

