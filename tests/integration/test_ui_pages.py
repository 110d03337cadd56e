"""The summary-board page's HTML routes over a real server, without a browser: sign-in and its
cookie, what a conversation's page shows (escaped), the actions, and a second user who sees none
of it."""

from __future__ import annotations

import uuid

import pytest

from api_support import client
from memctx.models import NewMessage
from memctx.pipeline.catchup import catch_up
from ui_support import store_turns


@pytest.fixture
def ana(app, api_server, api_key_for):
    """Ana's signed-in page client, with one summarized conversation `lisbon` of 21 turns (the first
    one hostile HTML)."""
    user = uuid.uuid4()
    conv = app.store.create_conversation(user, external_id="lisbon", title="Lisbon trip")
    app.store.append_messages(user, conv.id, [NewMessage.build("user", "Quiet <script>alert(1)</script> & calm",
                                                               external_id="<x>")])
    store_turns(app, user, conv.id, 0, 20)
    catch_up(app, user, conv.id, force_board=True)
    with client(api_server) as c:
        r = c.post("/ui/sign-in", data={"credential": api_key_for(user)})
        assert r.status_code == 303 and r.headers["location"] == "/ui/"
        c.conversation = conv
        yield c


def test_sign_in_sets_a_strict_http_only_cookie_and_refuses_bad_keys(api_server, api_key_for):
    with client(api_server) as c:
        r = c.get("/ui/")
        assert r.status_code == 303 and r.headers["location"] == "/ui/sign-in"
        bad = c.post("/ui/sign-in", data={"credential": "mck_not_a_key"})
        assert bad.status_code == 401 and "not valid" in bad.text and "memctx_ui" not in bad.headers.get("set-cookie", "")
        good = c.post("/ui/sign-in", data={"credential": api_key_for(uuid.uuid4())})
        cookie = good.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/ui" in cookie
        assert "No conversations yet" in c.get("/ui/").text
        assert c.post("/ui/sign-out").status_code == 303
        assert c.get("/ui/").status_code == 303
        assert c.get("/ui/static/ui.css").headers["content-type"].startswith("text/css")  # served from the package
        assert c.get("/ui/static/ui.js").headers["content-type"].startswith("text/javascript")
        assert c.get("/ui/static/x.js").status_code == 404
        icon = c.get("/favicon.ico")  # what a browser asks of any page: no 404 in its console
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml" and b"<svg" in icon.content
        assert c.get("/ui/static/favicon.svg").content == icon.content
        assert '<link rel="icon" href="/ui/static/favicon.svg"' in c.get("/ui/sign-in").text


def test_the_conversation_page_shows_board_tree_chain_with_sources_escaped(ana):
    listing = ana.get("/ui/")
    assert "Lisbon trip" in listing.text and f'/ui/c/{ana.conversation.id}' in listing.text
    page = ana.get("/ui/c/lisbon")
    assert page.status_code == 200
    html = page.text
    for heading in ("Board", "Summary tree", "Live chain", "Last working contexts", "Summarize now"):
        assert heading in html
    assert 'data-section="entities"' in html and "Tomas" in html
    source = html.split("<summary>t4</summary>", 1)[1].split("</details>", 1)[0]  # an item's source by its id
    assert "Alfama, near the castle." in source
    assert "Quiet &lt;script&gt;alert(1)&lt;/script&gt; &amp; calm" in html and "<script>alert" not in html
    assert "&lt;x&gt;" in html and "<x>" not in html  # an external id, escaped too
    assert 'class="node' in html and "Level 1" in html


def test_editing_a_summary_and_summarizing_show_on_the_page(ana, app):
    conv = ana.conversation
    first = ana.get(f"/ui/c/{conv.id}/live").json()
    tree_html = ana.get(f"/ui/c/{conv.id}").text
    sid = tree_html.split('data-summary="', 1)[1].split('"', 1)[0]
    r = ana.post(f"/ui/c/{conv.id}/summaries/{sid}", data={"text": "Ana & Tomas <b>edited</b> this."})
    assert r.status_code == 303 and r.headers["location"].endswith("done=edited")
    html = ana.get(r.headers["location"]).text
    assert "Ana &amp; Tomas &lt;b&gt;edited&lt;/b&gt; this." in html and "Summary saved" in html
    assert ana.get(f"/ui/c/{conv.id}/live").json()["version"] != first["version"]
    store_turns(app, conv.user_id, conv.id, 20, 12)
    assert ana.get(f"/ui/c/{conv.id}/live").json()["pending"] > 0  # the worker's outbox waits
    assert ana.post(f"/ui/c/{conv.id}/summarize").status_code == 303
    after = ana.get(f"/ui/c/{conv.id}").text
    assert after.count('class="node') > tree_html.count('class="node')
    assert ana.get(f"/ui/c/{conv.id}/live").json()["pending"] == 0  # nothing left for the worker


def test_the_actions_take_the_external_id_as_the_page_s_address_does(ana, app):
    conv = ana.conversation
    store_turns(app, conv.user_id, conv.id, 20, 12)
    assert ana.get("/ui/c/lisbon/live").json()["pending"] > 0
    r = ana.post("/ui/c/lisbon/summarize")
    assert r.status_code == 303 and r.headers["location"] == "/ui/c/lisbon?done=summarized"
    assert ana.get("/ui/c/lisbon/live").json()["pending"] == 0
    assert ana.post("/ui/c/lisbon/board/entities/0", data={"text": "Tomas, Ana's partner"}).status_code == 303
    assert "Tomas, Ana&#x27;s partner" in ana.get("/ui/c/lisbon").text
    refused = ana.post("/ui/c/lisbon/board/entities/0", data={"text": "   "})
    assert refused.status_code == 422 and 'href="/ui/c/lisbon"' in refused.text
    assert ana.post("/ui/c/lisbon/close").headers["location"] == "/ui/c/lisbon?done=closed"
    assert app.store.find_conversation(conv.user_id, "lisbon").closed_at is not None
    assert ana.post("/ui/c/nowhere/summarize").status_code == 404


def test_a_second_user_sees_nothing_and_changes_nothing(ana, api_server, api_key_for):
    conv = ana.conversation
    with client(api_server) as bob:
        bob.post("/ui/sign-in", data={"credential": api_key_for(uuid.uuid4())})
        assert "Lisbon" not in bob.get("/ui/").text
        for path in (f"/ui/c/{conv.id}", "/ui/c/lisbon", f"/ui/c/{conv.id}/live"):
            assert bob.get(path).status_code == 404
        for action in ("summarize", "regenerate", "close"):
            assert bob.post(f"/ui/c/{conv.id}/{action}").status_code == 404
            assert bob.post(f"/ui/c/lisbon/{action}").status_code == 404
    assert "Tomas" in ana.get("/ui/c/lisbon").text


def test_a_post_from_another_origin_is_refused(ana, api_key_for):
    evil = {"Origin": "https://evil.example"}
    r = ana.post(f"/ui/c/{ana.conversation.id}/summarize", headers=evil)
    assert r.status_code == 403
    # Signing in and out from another origin neither sets nor clears the cookie (login CSRF).
    signed_in = ana.post("/ui/sign-in", data={"credential": api_key_for(uuid.uuid4())}, headers=evil)
    signed_out = ana.post("/ui/sign-out", headers=evil)
    assert (signed_in.status_code, signed_out.status_code) == (403, 403)
    assert "set-cookie" not in signed_in.headers and "set-cookie" not in signed_out.headers
    assert "Lisbon trip" in ana.get("/ui/").text  # still Ana, still signed in
