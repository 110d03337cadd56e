"""The profile and feedback through the HTTP door: a user sees, corrects, deletes and adds to what
was learned about them, rates what a context brought, and finds every rating in the dashboard
view; another user can neither see nor touch any of it."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from psycopg.rows import dict_row

from api_support import client

SAID = [("user", "I'm vegetarian and allergic to peanuts."), ("assistant", "Noted."),
        ("user", "I live in Porto with my wife Ana."), ("assistant", "Lovely city."),
        ("user", "Please keep your answers short."), ("assistant", "Will do.")]


def _conversation(c, turns, external_id=None) -> str:
    r = c.post("/v1/conversations", json={"external_id": external_id} if external_id else {})
    assert r.status_code == 201, r.text
    conv = r.json()["id"]
    assert c.post(f"/v1/conversations/{conv}/messages",
                  json={"messages": [{"role": role, "content": text} for role, text in turns]}).status_code == 201
    assert c.post(f"/v1/conversations/{conv}/close").status_code == 200
    return conv


@pytest.fixture
def carla(api_server, api_key_for):
    user = uuid.uuid4()
    with client(api_server, api_key_for(user)) as c:
        c.user_id = user
        c.conversation = _conversation(c, SAID, "intro")
        yield c


@pytest.fixture
def dan(api_server, api_key_for):
    with client(api_server, api_key_for(uuid.uuid4())) as c:
        yield c


def _items(c, status="active"):
    r = c.get("/v1/me/profile", params={"status": status})
    assert r.status_code == 200, r.text
    return {i["value"]: i for i in r.json()["items"]}


def test_the_profile_is_listed_corrected_deleted_and_added_to(carla, dan):
    items = _items(carla)
    diet = items["I'm vegetarian and allergic to peanuts"]
    assert diet["kind"] == "preference" and diet["sources"][0]["conversation_id"] == carla.conversation
    home = items["I live in Porto with my wife Ana"]
    r = carla.patch(f"/v1/me/profile/{home['id']}", json={"value": "I live in Porto"})
    assert r.status_code == 200 and r.json()["value"] == "I live in Porto" and r.json()["edited_at"]
    r = carla.delete(f"/v1/me/profile/{diet['id']}")
    assert r.status_code == 200 and r.json()["status"] == "deleted"
    added = carla.post("/v1/me/profile", json={"value": "Always use metric units", "kind": "instruction"})
    assert added.status_code == 201 and added.json()["origin"] == "user"
    assert set(_items(carla)) >= {"I live in Porto", "Always use metric units"}
    assert [i["id"] for i in _items(carla, "deleted").values()] == [diet["id"]]
    # regenerating learns the conversation again: the edit and the deletion stick
    assert carla.post(f"/v1/conversations/{carla.conversation}/summarize", params={"regenerate": True}).status_code == 200
    again = _items(carla)
    assert "I live in Porto" in again and "I live in Porto with my wife Ana" not in again
    assert not any("peanuts" in v for v in again)

    # bad input changes nothing; another user's item is unknown
    assert carla.patch(f"/v1/me/profile/{home['id']}", json={"value": ""}).status_code == 422
    assert carla.post("/v1/me/profile", json={"value": "x", "kind": "rumour"}).status_code == 422
    assert carla.patch(f"/v1/me/profile/{home['id']}", json={"value": "a\u0000b"}).status_code == 422
    assert _items(carla)["I live in Porto"]["id"] == home["id"]
    assert dan.get(f"/v1/me/profile/{home['id']}").status_code == 404
    assert dan.delete(f"/v1/me/profile/{home['id']}").status_code == 404
    assert dan.patch(f"/v1/me/profile/{home['id']}", json={"value": "mine"}).status_code == 404
    assert _items(dan) == {}


def test_a_profile_item_rated_wrong_never_comes_back(carla):
    home = _items(carla)["I live in Porto with my wife Ana"]
    r = carla.post("/v1/feedback", json={"kind": "profile_item", "id": home["id"], "rating": "wrong",
                                         "note": "we moved"})
    assert r.status_code == 201 and r.json()["via"] == "api"
    for regenerate in (False, True):
        assert carla.post(f"/v1/conversations/{carla.conversation}/summarize",
                          params={"regenerate": regenerate}).status_code == 200
        assert "I live in Porto with my wife Ana" not in _items(carla)
    # said again in a new conversation, it stays gone
    _conversation(carla, [("user", "I live in Porto with my wife Ana."), ("assistant", "Noted.")])
    assert "I live in Porto with my wife Ana" not in _items(carla)
    new = carla.post("/v1/conversations", json={}).json()["id"]
    context = carla.post(f"/v1/conversations/{new}/context",
                         json={"query": "Where do we live?", "token_budget": 400, "scope": "user"}).json()
    assert not any(s["kind"] == "profile" and s["id"] == home["id"] for s in context["sources"])


def test_an_item_rated_outdated_is_kept_as_history(carla):
    diet = _items(carla)["I'm vegetarian and allergic to peanuts"]
    assert carla.post("/v1/feedback", json={"kind": "profile_item", "id": diet["id"],
                                            "rating": "outdated"}).status_code == 201
    assert "I'm vegetarian and allergic to peanuts" not in _items(carla)
    old = _items(carla, "replaced")["I'm vegetarian and allergic to peanuts"]
    assert old["replaced_at"] and old["replaced_by"] is None


def test_a_memory_rated_useful_twice_outranks_an_equal_one(carla, database_url):
    same = [("user", "The spare key is under the blue flowerpot."), ("assistant", "Good to know.")]
    first = _conversation(carla, same, "keys-1")
    second = _conversation(carla, same, "keys-2")

    def ranked():
        r = carla.post("/v1/search", json={"query": "where is the spare key", "limit": 5})
        assert r.status_code == 200
        hits = [m for m in r.json()["memories"] if m["fragments"][0]["text"].startswith("The spare key")]
        return [(m["conversation_id"], m["id"], m["score"]) for m in hits]

    before = ranked()
    # the same words: only their ranks in the search's lists tell them apart
    assert {c for c, _, _ in before} == {first, second} and before[0][2] >= before[1][2] > 0.9 * before[0][2]
    lower = before[1]
    for _ in range(2):
        assert carla.post("/v1/feedback", json={"kind": "message", "id": lower[1], "rating": "useful"}).status_code == 201
    after = ranked()
    assert after[0][1] == lower[1] and after[0][2] > after[1][2]
    # one vote cannot take over: the boost is bounded
    for _ in range(20):
        carla.post("/v1/feedback", json={"kind": "message", "id": lower[1], "rating": "useful"})
    assert ranked()[0][2] <= 1.5 * after[1][2]

    # every rating is stored with who gave it and when, and the dashboard view shows it
    listed = carla.get("/v1/me/feedback", params={"limit": 100}).json()["ratings"]
    assert len(listed) == 22 and {r["rated_by"] for r in listed} == {str(carla.user_id)}
    assert listed[0]["target_text"].startswith("The spare key")
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        rows = conn.execute("select rating, via, rated_by, created_at, target_kind from memctx.feedback_log "
                            "where user_id = %s", (carla.user_id,)).fetchall()
    assert len(rows) == 22 and all(r["via"] == "api" and r["created_at"] for r in rows)


def test_a_rating_of_something_not_yours_is_refused_and_stored_nowhere(carla, dan):
    diet = _items(carla)["I'm vegetarian and allergic to peanuts"]
    assert dan.post("/v1/feedback", json={"kind": "profile_item", "id": diet["id"], "rating": "wrong"}).status_code == 404
    assert dan.post("/v1/feedback", json={"kind": "message", "id": str(uuid.uuid4()), "rating": "useful"}).status_code == 404
    assert dan.post("/v1/feedback", json={"kind": "profile_item", "id": diet["id"], "rating": "great"}).status_code == 422
    assert dan.get("/v1/me/feedback").json()["ratings"] == []
    assert "I'm vegetarian and allergic to peanuts" in _items(carla)
