"""The MCP tools of the profile: read what memctx learned about the user, correct it, and rate what
a working context brought. Thin, like every tool (`mcp_tools.server`): parse, call memctx as the
caller, keep the answer small and sourced."""

from __future__ import annotations

from typing import Annotated, Any, Callable, Literal
from uuid import UUID

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from memctx.mcp_tools.binding import bound, refusals
from memctx.pipeline import profile

MAX_ITEMS = 200


def get_user_profile(
        ctx: Context,
        status: Literal["active", "replaced", "deleted", "all"] = "active",
        limit: Annotated[int, Field(ge=1, le=MAX_ITEMS)] = 50) -> dict[str, Any]:
    """What this user told you about themselves in earlier conversations, learned by memctx: facts
    (family, home, work, pets, possessions), preferences (diet, allergies, tastes, tools),
    standing instructions (how to answer) and plans. Each item has an id, its value in the user's
    words, when it was first and last said, how sure memctx is (confidence) and the messages it
    came from. Honour standing instructions. `replaced` lists the history of values that changed;
    `deleted` the items the user removed (never use those)."""
    who = bound(ctx).caller
    items = profile.list_profile(who.app, who.user_id, status=None if status == "all" else status, limit=limit)
    return {"items": [_item(i) for i in items]}


def correct_user_profile(
        action: Literal["edit", "delete", "add"], ctx: Context,
        item_id: Annotated[str | None, Field(description="the item's id (edit, delete)")] = None,
        value: Annotated[str | None, Field(max_length=2000, description="the item in the user's words "
                                                                        "(edit, add)")] = None,
        kind: Literal["fact", "preference", "instruction", "plan"] = "fact") -> dict[str, Any]:
    """Change what memctx knows about this user, when the user asks you to: `edit` an item to the
    user's words (kept even when memctx learns from the same messages again), `delete` one (it is
    never learned again), or `add` one they state (`kind` instruction for how they want you to
    answer from now on). Returns the item as stored."""
    who = bound(ctx).caller
    with refusals(LookupError):
        if action == "add":
            if not value:
                raise ToolError("add needs a value")
            item = profile.add_item(who.app, who.user_id, value, kind=kind)
        elif item_id is None:
            raise ToolError(f"{action} needs item_id")
        elif action == "edit":
            if not value:
                raise ToolError("edit needs a value")
            item = profile.edit_item(who.app, who.user_id, _uuid(item_id), value)
        else:
            item = profile.delete_item(who.app, who.user_id, _uuid(item_id))
    return _item(item)


def rate_context_item(
        kind: Literal["profile_item", "message", "summary", "procedure"],
        item_id: Annotated[str, Field(description="the id, as the working context's `sources` give it")],
        rating: Literal["useful", "wrong", "outdated"], ctx: Context,
        note: Annotated[str | None, Field(max_length=2000)] = None) -> dict[str, Any]:
    """Tell memctx how a working context served you: rate one thing it brought (a profile item, a
    message or summary among its memories, a procedure) as `useful` (it counts for more in this
    user's later contexts, within a bound), `wrong` (a profile item is deleted and never learned
    again) or `outdated` (a profile item is kept only as history). Every rating is stored."""
    who = bound(ctx).caller
    with refusals(LookupError):
        stored = profile.rate(who.app, who.user_id, kind, _uuid(item_id), rating, via="mcp",
                              rated_by=str(who.user_id), note=note)
    return stored.as_json()


TOOLS: tuple[Callable[..., Any], ...] = (get_user_profile, correct_user_profile, rate_context_item)


def _uuid(value: str) -> UUID:
    try:
        return UUID(value)
    except ValueError:
        raise ToolError(f"{value!r} is not an id") from None


def _item(item: Any) -> dict[str, Any]:
    data = item.as_json()
    data["sources"] = [{"message_id": s["message_id"], "said_at": s["said_at"], "external_id": s["external_id"]}
                       for s in data["sources"]]
    return data
