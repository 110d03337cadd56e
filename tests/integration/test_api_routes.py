"""The HTTP API's routes, over a real uvicorn server on loopback and the test database: what each
returns to its owner, and that a second user can neither see, change nor delete any of it."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from psycopg.rows import dict_row

from api_support import client

TURNS = [("user", "I painted a sunrise over the lake last Sunday."),
         ("assistant", "Lovely! Which colours did you use?"),
         ("user", "Mostly orange and a deep violet; my sister Ana loved it."),
         ("assistant", "Ana has a good eye. Will you frame it?"),
         ("user", "Yes, I ordered an oak frame from the shop on Rua Augusta."),
         ("assistant", "Oak suits a warm palette."),
         ("user", "Remind me to pick the frame up on Friday."),
         ("assistant", "Noted: pick up the oak frame on Friday.")]


def _messages(turns=TURNS, prefix="m"):
    return {"messages": [{"role": r, "content": t, "id": f"{prefix}{i}"} for i, (r, t) in enumerate(turns)]}


@pytest.fixture
def alice(api_server, api_key_for):
    """Alice's client, with one summarized conversation `paint` (external id) of eight messages."""
    user = uuid.uuid4()
    with client(api_server, api_key_for(user)) as c:
        r = c.post("/v1/conversations", json={"external_id": "paint", "title": "Painting", "metadata": {"k": 1}})
        assert r.status_code == 201
        assert c.post("/v1/conversations/paint/messages", json=_messages()).status_code == 201
        assert c.post("/v1/conversations/paint/summarize").status_code == 200
        c.user_id = user
        c.conversation = r.json()
        yield c


@pytest.fixture
def bob(api_server, api_key_for):
    user = uuid.uuid4()
    with client(api_server, api_key_for(user)) as c:
        c.user_id = user
        yield c


def test_conversations_create_list_get_delete(alice):
    conv = alice.conversation
    assert conv["external_id"] == "paint" and conv["title"] == "Painting" and conv["metadata"] == {"k": 1}
    again = alice.post("/v1/conversations", json={"external_id": "paint"})
    assert again.status_code == 201 and again.json()["id"] == conv["id"]  # get-or-create by external id
    for n in range(3):
        alice.post("/v1/conversations", json={"title": f"extra {n}"})
    first = alice.get("/v1/conversations", params={"limit": 2}).json()
    second = alice.get("/v1/conversations", params={"limit": 2, "offset": first["next_offset"]}).json()
    assert len(first["items"]) == 2 and len(second["items"]) == 2 and second["next_offset"] is None
    assert len({c["id"] for c in first["items"] + second["items"]}) == 4
    for name in (conv["id"], "paint"):
        got = alice.get(f"/v1/conversations/{name}")
        assert got.status_code == 200 and got.json()["message_count"] == len(TURNS)
    assert alice.delete("/v1/conversations/paint").status_code == 204
    assert alice.get(f"/v1/conversations/{conv['id']}").status_code == 404


def test_messages_append_and_page_by_seq(alice, database_url):
    r = alice.post("/v1/conversations/paint/messages", json={"messages": [
        {"role": "user", "content": [{"type": "text", "text": "Here is the frame"},
                                     {"type": "image", "url": "https://x/f.jpg", "caption": "an oak frame"}],
         "id": "img", "created_at": "2024-05-01T10:00:00Z", "metadata": {"speaker": "Mel"}},
        {"role": "tool", "content": [{"type": "tool_result", "content": "shop opens at 9"}]}]})
    assert r.status_code == 201
    stored = r.json()["messages"]
    assert [m["seq"] for m in stored] == [len(TURNS) + 1, len(TURNS) + 2]
    assert stored[0]["text"] == "Here is the frame\n[image: an oak frame]" and stored[0]["external_id"] == "img"
    assert stored[0]["created_at"].startswith("2024-05-01T10:00:00")
    with psycopg.connect(database_url, row_factory=dict_row) as conn:  # the worker is asked, as for any insert
        waiting = conn.execute("select count(*) as n from memctx.outbox where conversation_id = %s and processed_at is null",
                               (alice.conversation["id"],)).fetchone()["n"]
    assert waiting >= 1
    retried = alice.post("/v1/conversations/paint/messages", json={"messages": [{"role": "user", "content": "x", "id": "img"}]})
    assert retried.status_code == 201 and retried.json()["messages"] == []  # a retry stores nothing twice
    page = alice.get("/v1/conversations/paint/messages", params={"after_seq": 2, "limit": 3}).json()
    assert [m["seq"] for m in page["items"]] == [3, 4, 5] and page["next_after_seq"] == 5
    last = alice.get("/v1/conversations/paint/messages", params={"after_seq": 8, "limit": 5}).json()
    assert [m["seq"] for m in last["items"]] == [9, 10] and last["next_after_seq"] is None


def test_context_is_the_working_context_as_the_cli_prints_it(alice, app):
    r = alice.post(f"/v1/conversations/{alice.conversation['id']}/context",
                   json={"query": "What colours was the sunrise?", "token_budget": 400})
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"mode", "budget", "tokens", "messages", "sections", "sources", "dropped", "compressed",
                         "timings_ms", "today"}
    assert body["budget"] == 400 and 0 < body["tokens"] <= 400
    assert body["messages"][0]["role"] == "system" and body["messages"][-1] == {
        "role": "user", "content": "What colours was the sunrise?"}
    assert "violet" in "\n".join(m["content"] for m in body["messages"])
    quo = alice.post("/v1/conversations/paint/context",
                     json={"query": "frame?", "token_budget": 300, "status_quo": True, "scope": "user"}).json()
    assert quo["mode"] == "status_quo"


def test_search_finds_memories_across_the_callers_conversations(alice):
    alice.post("/v1/conversations", json={"external_id": "other"})
    alice.post("/v1/conversations/other/messages", json={"messages": [{"role": "user", "content": "My cat Miso hates oak furniture."}]})
    everywhere = alice.post("/v1/search", json={"query": "oak frame", "limit": 5}).json()["memories"]
    assert {m["conversation_id"] for m in everywhere} == {alice.conversation["id"], alice.get("/v1/conversations/other").json()["id"]}
    only = alice.post("/v1/search", json={"query": "oak", "conversation_id": "other"}).json()["memories"]
    assert only and {m["conversation_id"] for m in only} == {alice.get("/v1/conversations/other").json()["id"]}
    for window in ("today", "week", "month", "all", {"since": "2000-01-01T00:00:00Z"}):
        assert alice.post("/v1/search", json={"query": "oak", "time_range": window}).json()["memories"], window
    past = {"since": "2000-01-01T00:00:00Z", "until": "2000-01-02T00:00:00Z"}
    old = alice.post("/v1/search", json={"query": "oak", "time_range": past}).json()["memories"]
    assert [m for m in old if m["kind"] == "message"] == []


def test_summaries_board_chain_edit_regenerate_close_continuity(alice):
    chain = alice.get("/v1/conversations/paint/chain").json()["items"]
    summary = next(c for c in chain if c["kind"] == "summary")
    assert sum(1 for c in chain if c["kind"] == "message") < len(TURNS)
    board = alice.get("/v1/conversations/paint/board").json()
    assert board["message_count"] == len(TURNS)
    edited = alice.put(f"/v1/summaries/{summary['id']}", json={"text": "Mel painted a sunrise; frame on Friday."})
    assert edited.status_code == 200 and edited.json()["edited"] is True
    assert any(c["edited"] for c in alice.get("/v1/conversations/paint/chain").json()["items"])
    assert alice.post("/v1/conversations/paint/summarize", params={"regenerate": True}).status_code == 200
    assert not any(c["edited"] for c in alice.get("/v1/conversations/paint/chain").json()["items"])
    assert alice.get("/v1/continuity").json() is None
    closed = alice.post("/v1/conversations/paint/close")
    assert closed.status_code == 200 and closed.json()["summary"]
    alice.post("/v1/conversations", json={"external_id": "next"})
    note = alice.get("/v1/continuity", params={"current": "next"}).json()
    assert note["conversation_id"] == alice.conversation["id"]
    assert alice.get("/v1/continuity", params={"current": "paint"}).json() is None


def test_forget_me_deletes_every_row_of_the_caller_and_its_keys(alice, bob, database_url):
    bob.post("/v1/conversations", json={"external_id": "b"})
    bob.post("/v1/conversations/b/messages", json=_messages(TURNS[:2]))
    r = alice.delete("/v1/me")
    assert r.status_code == 200 and r.json()["conversations"] == 1 and r.json()["messages"] == len(TURNS)
    assert r.json()["api_keys"] == 1
    assert alice.get("/v1/me").status_code == 401  # the key went with everything else
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        for table, n in _user_rows(conn, alice.user_id).items():
            assert n == 0, table
        assert _user_rows(conn, bob.user_id)["messages"] == 2


def _user_rows(conn, user) -> dict[str, int]:
    tables = [r["table_name"] for r in conn.execute(
        "select table_name from information_schema.columns where table_schema = 'memctx' and column_name = 'user_id' "
        "and table_name in (select relname from pg_class where relkind = 'r')")]
    return {t: conn.execute(f"select count(*) as n from memctx.{t} where user_id = %s", (user,)).fetchone()["n"]
            for t in tables}


def test_a_second_user_can_not_see_change_or_delete_anything_of_the_first(alice, bob, database_url):
    conv_id = alice.conversation["id"]
    summary_id = next(c["id"] for c in alice.get("/v1/conversations/paint/chain").json()["items"] if c["kind"] == "summary")
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        before = _user_rows(conn, alice.user_id)
    bob.post("/v1/conversations", json={"external_id": "mine"})
    for name in (conv_id, "paint"):
        base = f"/v1/conversations/{name}"
        attempts = [
            bob.get(base), bob.delete(base),
            bob.post(f"{base}/messages", json=_messages(TURNS[:1], prefix="b")),
            bob.get(f"{base}/messages"),
            bob.post(f"{base}/context", json={"query": "sunrise", "token_budget": 300}),
            bob.get(f"{base}/board"), bob.get(f"{base}/chain"),
            bob.post(f"{base}/summarize"), bob.post(f"{base}/summarize", params={"regenerate": True}),
            bob.post(f"{base}/close"),
            bob.post("/v1/search", json={"query": "sunrise", "conversation_id": name}),
            bob.get("/v1/continuity", params={"current": name}),
        ]
        assert [(r.request.method, r.request.url.path, r.status_code) for r in attempts if r.status_code != 404] == []
        assert {r.json()["detail"] for r in attempts} == {"conversation not found"}
    unknown = bob.get(f"/v1/conversations/{uuid.uuid4()}")
    assert (unknown.status_code, unknown.json()) == (404, {"detail": "conversation not found"})  # the same answer
    edit = bob.put(f"/v1/summaries/{summary_id}", json={"text": "hijacked"})
    assert edit.status_code == 404 and bob.put(f"/v1/summaries/{uuid.uuid4()}", json={"text": "x"}).json() == edit.json()
    assert [c["external_id"] for c in bob.get("/v1/conversations").json()["items"]] == ["mine"]
    assert bob.post("/v1/search", json={"query": "sunrise oak frame violet"}).json()["memories"] == []
    assert bob.get("/v1/continuity").json() is None
    assert bob.delete("/v1/me").json()["conversations"] == 1  # only Bob's own
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        assert _user_rows(conn, alice.user_id) == before
        assert conn.execute("select count(*) as n from memctx.summaries where content = 'hijacked'").fetchone()["n"] == 0
    assert alice.get("/v1/conversations/paint").json()["message_count"] == len(TURNS)
