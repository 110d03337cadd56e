"""The profile's MCP tools through the official client, over stdio and HTTP: an agent reads what
memctx learned about its user, corrects it, and rates what a context brought; another user's
items are unknown ids."""

from __future__ import annotations

import anyio

from memctx.pipeline import profile
from test_mcp_tools import alice, bob, call, connect, refused  # noqa: F401 (fixtures)


def test_an_agent_reads_corrects_and_rates_the_profile(connect, alice, bob, app):  # noqa: F811
    async def scenario():
        async with connect(alice.key, "paint") as session:
            items = (await call(session, "get_user_profile"))["items"]
            by_value = {i["value"]: i for i in items}
            instruction = next(i for i in items if i["kind"] == "instruction")
            assert "short sentences" in instruction["value"] and instruction["sources"][0]["external_id"] == "m6"
            guidebook = next(i for v, i in by_value.items() if "guidebook" in v)
            edited = await call(session, "correct_user_profile", action="edit", item_id=guidebook["id"],
                                value="I ordered a Lisbon guidebook")
            assert edited["value"] == "I ordered a Lisbon guidebook" and edited["edited_at"]
            added = await call(session, "correct_user_profile", action="add", value="Always use metric units",
                               kind="instruction")
            rated = await call(session, "rate_context_item", kind="profile_item", item_id=added["id"],
                               rating="useful")
            assert rated["via"] == "mcp" and rated["rating"] == "useful"
            wrong = await call(session, "rate_context_item", kind="profile_item", item_id=instruction["id"],
                               rating="wrong", note="I never said that")
            assert wrong["note"] == "I never said that"
            assert "not an id" in await refused(session, "rate_context_item", kind="message", item_id="x",
                                                rating="useful")
            assert "edit needs a value" in await refused(session, "correct_user_profile", action="edit",
                                                         item_id=guidebook["id"])
            context = await call(session, "get_working_context", query="How far is it to Sintra?", token_budget=600)
            gone = await call(session, "get_user_profile", status="deleted")
        async with connect(bob.key) as session:
            assert (await call(session, "get_user_profile"))["items"] == []
            assert "no profile item" in await refused(session, "correct_user_profile", action="delete",
                                                      item_id=guidebook["id"])
        return instruction, context, gone, added

    instruction, context, gone, added = anyio.run(scenario)
    assert [i["id"] for i in gone["items"]] == [instruction["id"]]
    section = context["messages"][1]["content"]  # the profile, first after the system prompt
    assert "Always use metric units" in section and "short sentences" not in section  # rated wrong: gone
    assert any(s["kind"] == "profile" and s["id"] == added["id"] for s in context["sources"])
    assert [r.rating for r in profile.ratings(app, alice.user)] == ["wrong", "useful"]
    assert profile.get_item(app, alice.user, guidebook_id(app, alice.user)).value == "I ordered a Lisbon guidebook"


def guidebook_id(app, user):
    return next(i.id for i in profile.list_profile(app, user) if "guidebook" in i.value)
