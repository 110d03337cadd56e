"""The page's profile section over a real server, without a browser: what was learned about the
signed-in person with its sources (escaped), editing, deleting, adding and rating through forms,
the ratings listed, and a second user who sees and changes none of it."""

from __future__ import annotations

import uuid

import pytest

from api_support import client
from memctx.models import NewMessage
from memctx.pipeline import profile
from memctx.pipeline.catchup import catch_up


@pytest.fixture
def eva(app, api_server, api_key_for):
    user = uuid.uuid4()
    conv = app.store.create_conversation(user, external_id="chat")
    app.store.append_messages(user, conv.id, [
        NewMessage.build("user", "I'm allergic to <b>shellfish</b> & nuts.", external_id="e1"),
        NewMessage.build("assistant", "Noted.", external_id="e2"),
        NewMessage.build("user", "I live in Ghent with my partner Lou.", external_id="e3"),
        NewMessage.build("assistant", "Nice.", external_id="e4")])
    catch_up(app, user, conv.id, force_board=True)
    with client(api_server) as c:
        assert c.post("/ui/sign-in", data={"credential": api_key_for(user)}).status_code == 303
        c.user = user
        yield c


def _item(app, user, word):
    return next(i for i in profile.list_profile(app, user) if word in i.value)


def test_the_profile_page_shows_corrects_and_rates_what_was_learned(eva, app):
    page = eva.get("/ui/profile")
    assert page.status_code == 200
    assert "&lt;b&gt;shellfish&lt;/b&gt; &amp; nuts" in page.text and "<b>shellfish" not in page.text
    assert "Ghent" in page.text and "e3" in page.text and 'href="/ui/profile"' in eva.get("/ui/").text
    ghent, shellfish = _item(app, eva.user, "Ghent"), _item(app, eva.user, "shellfish")

    r = eva.post(f"/ui/profile/{ghent.id}", data={"value": "I live in Ghent"})
    assert r.status_code == 303 and r.headers["location"] == "/ui/profile?done=edited"
    assert profile.get_item(app, eva.user, ghent.id).value == "I live in Ghent"
    assert eva.post("/ui/feedback", data={"kind": "profile_item", "target": str(shellfish.id),
                                          "rating": "useful"}).status_code == 303
    source = shellfish.sources[0].message_id
    assert eva.post("/ui/feedback", data={"kind": "message", "target": str(source), "rating": "useful"}).status_code == 303
    assert eva.post("/ui/profile/add", data={"value": "Answer in Dutch", "kind": "instruction"}).status_code == 303
    assert eva.post(f"/ui/profile/{ghent.id}/delete").status_code == 303
    assert profile.get_item(app, eva.user, ghent.id).status == "deleted"
    assert eva.post("/ui/profile/add", data={"value": " ", "kind": "fact"}).status_code == 422
    assert eva.post("/ui/feedback", data={"kind": "profile_item", "target": str(shellfish.id),
                                          "rating": "superb"}).status_code == 422

    again = eva.get("/ui/profile?done=rated").text
    assert "Thanks: your rating is stored." in again and "Answer in Dutch" in again
    ratings = again.split("Your ratings", 1)[1]
    assert ratings.count("<tr><td>") == 2 and "page" in ratings
    assert [r.via for r in profile.ratings(app, eva.user)] == ["page", "page"]
    # a form from another site is refused
    assert eva.post(f"/ui/profile/{shellfish.id}/delete", headers={"Origin": "http://evil.example"}).status_code == 403


def test_another_user_sees_and_changes_nothing_of_it(eva, app, api_server, api_key_for):
    shellfish = _item(app, eva.user, "shellfish")
    with client(api_server) as other:
        assert other.post("/ui/sign-in", data={"credential": api_key_for(uuid.uuid4())}).status_code == 303
        assert "shellfish" not in other.get("/ui/profile").text
        assert other.post(f"/ui/profile/{shellfish.id}/delete").status_code == 404
        assert other.post(f"/ui/profile/{shellfish.id}", data={"value": "mine"}).status_code == 404
        assert other.post("/ui/feedback", data={"kind": "profile_item", "target": str(shellfish.id),
                                                "rating": "wrong"}).status_code == 404
    assert _item(app, eva.user, "shellfish").status == "active"
