"""Where an API append's messages are embedded (MEMCTX_APPEND_EMBEDDING): inside the request, or
by the worker afterwards. Either way the context the next request gets holds what was said: a
message not embedded yet is found by its words, and once the worker has run it is embedded."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from api_support import build_api, client, serve
from memctx.pipeline.catchup import catch_up

FACT = "The locksmith who fixed our back door is Tomasz Wierzbicki, on Harbour Street."
FILLER = ["We planned the garden beds for spring, tomatoes along the fence.",
          "The train to the coast was late again, forty minutes this time.",
          "My niece started violin lessons and practises every evening.",
          "We tried the new ramen place; the broth was too salty for me.",
          "The printer at work jams whenever someone prints double-sided.",
          "I finished the mystery novel, the butler really did it.",
          "Our neighbour's dog barks at the postman every single morning.",
          "I am learning to bake sourdough, the starter is called Bubbles."]


def _turns() -> list[dict]:
    texts = [FACT] + [f"{FILLER[i % len(FILLER)]} (day {i})" for i in range(1, 40)]
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t, "id": f"m{i}"} for i, t in enumerate(texts)]


def _unembedded(database_url: str) -> int:
    with psycopg.connect(database_url) as conn:
        return conn.execute("select count(*) from memctx.messages where embedding is null").fetchone()[0]


def _context_text(c, query: str) -> tuple[str, dict]:
    r = c.post("/v1/conversations/home/context", json={"query": query, "token_budget": 300})
    assert r.status_code == 200
    body = r.json()
    return "\n".join(m["content"] for m in body["messages"]), body


@pytest.mark.parametrize("where", ["request", "worker"])
def test_the_context_holds_an_older_fact_whether_or_not_it_is_embedded_yet(app, settings, database_url,
                                                                          api_key_for, where):
    user = uuid.uuid4()
    with serve(build_api(app, settings.model_copy(update={"append_embedding": where}))) as base, \
            client(base, api_key_for(user)) as c:
        assert c.post("/v1/conversations", json={"external_id": "home"}).status_code == 201
        assert c.post("/v1/conversations/home/messages", json={"messages": _turns()}).status_code == 201
        assert _unembedded(database_url) == (40 if where == "worker" else 0)

        text, body = _context_text(c, "Who is the locksmith that fixed the back door?")
        assert body["tokens"] <= 300
        assert "(day 15)" not in text  # the history does not fit: the fact came from memory, not the window
        assert "Tomasz Wierzbicki" in text

        conversation = c.get("/v1/conversations/home").json()["id"]
        catch_up(app, user, uuid.UUID(conversation))  # what the worker does for the append's outbox rows
        assert _unembedded(database_url) == 0
        text, _ = _context_text(c, "Who is the locksmith that fixed the back door?")
        assert "Tomasz Wierzbicki" in text
