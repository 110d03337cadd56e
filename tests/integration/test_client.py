"""The library's front door (`memctx.connect(...)`, `Memctx`) against a real Postgres: either order of
a turn sends the user's message once, every call names its user and runs under row-level security,
`as_of` places relative dates, and the embedded server is started and stopped only when asked."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

import memctx
from memctx.app import NotReady
from memctx.client import Memctx
from memctx.config import Settings
from memctx.models import InvalidInput
from memctx.store import UnknownConversation
from support import TRIP

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=timezone.utc)
ASKED = "What should we keep in mind when booking Tomás's birthday dinner?"
REPLY = "A vegetarian tasting menu without shellfish, booked for 28 May."


@pytest.fixture
def memory(app):
    return Memctx(app)  # as connect() builds it, over the test's database and embedder


def _say_trip(memory, user, name):
    memory.remember([{"role": role, "content": text, "metadata": {"speaker": who},
                      "created_at": T0 + timedelta(minutes=2 * i)} for i, (role, who, text) in enumerate(TRIP)],
                    user=user, conversation=name)


def _texts(wc):
    return [(m["role"], m["content"]) for m in wc.messages]


@pytest.mark.parametrize("budget,scope", [(3000, "conversation"), (350, "conversation"), (350, "user")])
def test_remembering_the_message_before_asking_sends_it_once_as_asking_first_does(memory, budget, scope):
    """Two users with the same history: one asks, then remembers the turn; the other remembers the
    user's message first, then asks with it. The model gets the same messages, the question once."""
    first, second = uuid.uuid4(), uuid.uuid4()
    for user in (first, second):
        _say_trip(memory, user, "trip")
    asked_first = memory.context(ASKED, user=first, conversation="trip", budget=budget, scope=scope, as_of=T0)
    memory.remember([{"role": "user", "content": ASKED}, {"role": "assistant", "content": REPLY}], user=first,
                    conversation="trip")
    memory.remember([{"role": "user", "content": ASKED}], user=second, conversation="trip")
    stored_first = memory.context(ASKED, user=second, conversation="trip", budget=budget, scope=scope, as_of=T0)
    assert _texts(stored_first) == _texts(asked_first)
    assert sum(ASKED in m["content"] for m in stored_first.messages) == 1
    assert stored_first.messages[-1] == {"role": "user", "content": ASKED}
    assert stored_first.tokens <= budget
    assert (budget == 3000) == (not stored_first.cuts)  # the whole history verbatim, or a compressed one


def test_a_repeated_question_after_its_answer_is_a_new_message(memory):
    user = uuid.uuid4()
    memory.remember([{"role": "user", "content": "Is it raining?"}, {"role": "assistant", "content": "Not yet."}],
                    user=user, conversation="weather")
    wc = memory.context("Is it raining?", user=user, conversation="weather")
    assert _texts(wc)[1:] == [("user", "Is it raining?"), ("assistant", "Not yet."), ("user", "Is it raining?")]


def test_every_call_names_a_user_and_sees_only_that_users_rows(memory, app):
    ana, ben = uuid.uuid4(), uuid.uuid4()
    stored = memory.remember([{"role": "user", "content": "My locker code is 4471."}], user=ana, conversation="gym")
    conv = stored[0].conversation_id
    with pytest.raises(TypeError):
        memory.context("What is my locker code?", conversation="gym")  # type: ignore[call-arg]
    with pytest.raises(InvalidInput, match="uuid5"):
        memory.context("What is my locker code?", user="ana@example.com", conversation="gym")
    with pytest.raises(UnknownConversation):
        memory.context("What is my locker code?", user=ben, conversation=conv)
    assert memory.search("locker code", user=ben) == []
    assert "4471" in memory.search("locker code", user=str(ana))[0].text
    # Ben's "gym" is his own conversation, created on first use: Ana's stays hers.
    assert "4471" not in memory.context("What is my locker code?", user=ben, conversation="gym").text
    assert app.store.find_conversation(ben, "gym").id != conv


def test_the_old_call_without_a_user_still_works_and_says_what_to_do(app):
    from memctx.assemble import get_working_context

    conv = app.store.create_conversation(memctx.LOCAL_USER, external_id="local")
    with pytest.warns(DeprecationWarning, match="user="):
        wc = get_working_context(app, conv.id, "Hello?", 500)
    assert wc.messages[-1] == {"role": "user", "content": "Hello?"}


def test_as_of_is_the_moment_asked_for_relative_dates(memory):
    """"Last weekend" asked on Saturday 14 November is the fence; asked on the 28th, the kayaking."""
    user = uuid.uuid4()
    diary = [(datetime(2026, 11, 7, 18, tzinfo=timezone.utc), "Painted the fence today."),
             (datetime(2026, 11, 11, 18, tzinfo=timezone.utc), "Long day at the office, a budget meeting."),
             (datetime(2026, 11, 21, 18, tzinfo=timezone.utc), "Went kayaking on the river today."),
             (datetime(2026, 11, 22, 18, tzinfo=timezone.utc), "Cooked a big lentil stew this evening.")]
    for when, text in diary:
        memory.remember([{"role": "user", "content": text, "created_at": when}], user=user, conversation="diary")

    def ranks(day: int) -> dict[str, int]:
        found = memory.search("What did I do last weekend?", user=user, limit=4,
                              as_of=datetime(2026, 11, day, 10, tzinfo=timezone.utc))
        return {m.text.split()[0]: i for i, m in enumerate(found)}

    on_14th, on_28th = ranks(14), ranks(28)
    assert on_14th["Painted"] < on_28th["Painted"] and on_28th["Went"] < on_14th["Went"]
    assert on_28th["Went"] == 0


def test_remember_refuses_what_it_would_drop_and_stores_nothing(memory, app):
    user = uuid.uuid4()
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]}
    with pytest.raises(InvalidInput, match="tool_calls"):
        memory.remember([{"role": "user", "content": "Book it."}, call], user=user, conversation="c")
    with pytest.raises(InvalidInput, match="ISO 8601"):
        memory.remember([{"role": "user", "content": "Hi", "created_at": "yesterday"}], user=user, conversation="c")
    assert app.store.list_conversations(user) == [] or app.store.list_messages(
        user, app.store.find_conversation(user, "c").id) == []


def test_a_tool_result_and_a_stored_system_prompt_keep_what_they_are(memory):
    user = uuid.uuid4()
    memory.remember([
        {"role": "system", "content": "You are a concise assistant for a bakery."},
        {"role": "user", "content": "Remind me to order butter."},
        {"role": "assistant", "content": [{"type": "tool_call", "name": "add_reminder", "arguments": {"text": "butter"}}]},
        {"role": "tool", "content": [{"type": "tool_result", "content": "reminder saved"}]},
    ], user=user, conversation="bakery")
    wc = memory.context("What did you save?", user=user, conversation="bakery")
    assert ("system", "You are a concise assistant for a bakery.") in _texts(wc)
    assert ("user", "[tool result: reminder saved]") in _texts(wc)


def test_each_context_is_in_the_request_log(memory, database_url):
    user = uuid.uuid4()
    _say_trip(memory, user, "trip")
    memory.remember([{"role": "user", "content": ASKED}], user=user, conversation="trip")
    wc = memory.context(ASKED, user=user, conversation="trip", budget=350)
    with psycopg.connect(database_url) as conn:
        row = conn.execute("select kind, token_budget, tokens_used, full_history_tokens from memctx.context_requests "
                           "where user_id = %s", (user,)).fetchone()
    assert row[:3] == ("context", 350, wc.tokens) and row[3] > wc.tokens  # the history it replaced, query once


def test_forget_removes_a_conversation_and_forget_user_everything(memory, app):
    user = uuid.uuid4()
    memory.remember([{"role": "user", "content": "Note A"}], user=user, conversation="a")
    memory.remember([{"role": "user", "content": "Note B"}], user=user, conversation="b")
    memory.forget(user=user, conversation="a")
    assert [c.external_id for c in app.store.list_conversations(user)] == ["b"]
    with pytest.raises(UnknownConversation):
        memory.forget(user=user, conversation="a")
    assert memory.forget_user(user)["messages"] == 1
    assert app.store.list_conversations(user) == []


def test_connect_migrates_when_asked(admin_url):
    name = f"memctx_client_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    dsn = psycopg.conninfo.make_conninfo(admin_url, dbname=name)
    try:
        with pytest.raises(NotReady, match="memctx migrate"):
            memctx.connect(dsn)
        with memctx.connect(dsn, migrate=True) as memory:
            user = uuid.uuid4()
            memory.remember([{"role": "user", "content": "Hello"}], user=user, conversation="first")
            assert memory.context("Hello again", user=user, conversation="first").messages[1]["content"] == "Hello"
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'drop database if exists "{name}" with (force)')


def test_connect_embedded_starts_the_server_and_stops_it_only_when_asked(tmp_path):
    home = tmp_path / "home"
    settings = Settings()
    with memctx.connect_embedded(home, settings=settings) as memory:
        dsn = memory.dsn
        assert str(home) in dsn
    with psycopg.connect(dsn) as conn:  # closed, the server is still there for the next process
        assert conn.execute("select 1").fetchone() == (1,)
    memory = memctx.connect_embedded(home, settings=settings)
    memory.close(stop_server=True)
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(dsn, connect_timeout=3)
