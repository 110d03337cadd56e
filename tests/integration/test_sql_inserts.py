"""Messages inserted by plain SQL (any client: psql, the Supabase client) behave like `memctx ingest`.

The database derives `text` from the typed content blocks with the rules of the Python ingest
path, refuses what ingest refuses, never lets a message without text become a search hit, and
the worker handles a message over the token limit that only SQL could have stored.
"""

from __future__ import annotations

import dataclasses
import random

import psycopg
import pytest
from psycopg.types.json import Jsonb

from memctx.pipeline import catchup
from memctx.pipeline.board import get_board
from memctx.models import InvalidInput, NewMessage
from memctx.retrieve.search import search_memories
from memctx.store import DEFAULT_USER, MessageStore

USER = DEFAULT_USER

# Values a block field may hold: strings with every kind of edge (outer and inner whitespace,
# Unicode spaces Python strips, escapes, non-BMP), and non-string JSON (key order, numbers).
STRINGS = ["", " ", "hello", "  padded  ", "multi\nline\n", "unicode é ü 日本 🎉", "\u2003em space\u3000",
           "\t\x0btab\x1f", 'quotes " and \\ backslash', "ctrl \x01 end", "\u00a0nbsp", "line\u2028sep"]
JSON_VALUES = [None, 0, 42, -7, 1.5, 0.1, 1e16, 1.5e-7, -0.0, 100.0, True, False, [], {}, [1, "a", None],
               {"query": "x", "limit": 5}, {"b": 1, "aa": {"zz": 1.0, "y": [1e22, 2.5e-5]}},
               {"é": 1, "e": 2, "ee": "日本"}, {"nested": {"list": [{"k": "v\n"}], "t": True}}]
MISSING = object()


def _field(rng: random.Random, values: list) -> object:
    return rng.choice([MISSING, *values])


def _block(rng: random.Random) -> dict:
    kind = rng.choice(["text", "text", "image", "tool_call", "tool_result", "thinking"])
    fields = {
        "text": {"text": STRINGS + JSON_VALUES[:4]},
        "image": {"caption": STRINGS + [None, 5, 0, ["c"]], "url": ["https://x/y.png"]},
        "tool_call": {"name": ["weather", "", "search_web", None, 7], "arguments": STRINGS[:4] + JSON_VALUES,
                      "id": ["call_1"]},
        "tool_result": {"content": STRINGS + JSON_VALUES, "tool_call_id": ["call_1"]},
        "thinking": {"text": ["private reasoning", ""]},
    }[kind]
    block = {"type": kind}
    for key, values in fields.items():
        value = _field(rng, values)
        if value is not MISSING:
            block[key] = value
    return block


def _cases() -> list[list[dict]]:
    fixed = [
        [{"type": "text", "text": "Here is the photo."}, {"type": "image", "caption": "a red bicycle"}],
        [{"type": "thinking", "text": "only private"}],
        [{"type": "image", "url": "https://x/y.png"}],
        [{"type": "text", "text": "   "}, {"type": "text", "text": "\u3000"}],
        [{"type": "text", "text": "  a"}, {"type": "thinking", "text": "x"}, {"type": "text", "text": "b  "}],
        [{"type": "tool_call", "name": "weather", "arguments": {"city": "Lisbon", "units": "metric"}},
         {"type": "tool_result", "content": "22°C and sunny"}],
        [{"type": "tool_call"}, {"type": "tool_result"}],
        [{"type": "tool_result", "content": {"rows": [{"id": 2, "name": "Ana"}], "count": 1}}],
    ]
    rng = random.Random(20240501)
    return fixed + [[_block(rng) for _ in range(rng.randint(1, 5))] for _ in range(400)]


def _sql_insert(conn, conversation_id, blocks_list, role="user"):
    with conn.cursor() as cur:
        cur.executemany("insert into memctx.messages (conversation_id, role, content) values (%s, %s, %s)",
                        [(conversation_id, role, Jsonb(b)) for b in blocks_list])


def _built(blocks: list[dict]) -> str | InvalidInput:
    try:
        return NewMessage.build("user", blocks).text
    except InvalidInput as exc:
        return exc


def test_sql_derived_text_is_identical_to_ingest_for_many_block_combinations(app):
    cases = _cases()
    built = [_built(blocks) for blocks in cases]
    accepted = [blocks for blocks, text in zip(cases, built) if isinstance(text, str)]
    refused = [(blocks, str(exc)) for blocks, exc in zip(cases, built) if isinstance(exc, InvalidInput)]
    conv = app.store.create_conversation(USER, external_id="blocks")
    with app.pool.connection() as conn:
        _sql_insert(conn, conv.id, accepted)
        stored = [r["text"] for r in conn.execute(
            "select text from memctx.messages where conversation_id = %s order by seq", (conv.id,))]
    expected = [text for text in built if isinstance(text, str)]
    mismatches = [(blocks, want, got) for blocks, want, got in zip(accepted, expected, stored) if want != got]
    assert not mismatches, mismatches[:3]
    assert len(stored) == len(accepted) and sum(t == "" for t in stored) > 5  # the empty cases are covered too
    # What ingest refuses (a text field holding a number, an object, a list), SQL refuses in its words.
    assert len(refused) > 20
    for blocks, says in refused:
        with app.pool.connection() as conn, pytest.raises(psycopg.errors.CheckViolation) as caught:
            _sql_insert(conn, conv.id, [blocks])
        assert caught.value.diag.message_primary == says, blocks


def test_a_message_date_no_reader_can_handle_is_refused_by_the_database(app):
    conv = app.store.create_conversation(USER, external_id="dates")
    for when in ("0001-01-01 00:00:00+00", "9999-12-31 23:59:59-14"):
        with app.pool.connection() as conn, pytest.raises(psycopg.errors.CheckViolation,
                                                          match="messages_created_at_range"):
            conn.execute("insert into memctx.messages (conversation_id, role, content, created_at) "
                         "values (%s, 'user', '[{\"type\": \"text\", \"text\": \"hi\"}]', %s)", (conv.id, when))
    assert app.store.list_messages(USER, conv.id) == []
    assert search_memories(app, USER, "hi") == []  # the user's search still answers


def test_sql_insert_refuses_block_types_that_ingest_refuses(app):
    conv = app.store.create_conversation(USER, external_id="bad")
    for content in ([{"type": "audio"}], [{"type": "text", "text": "ok"}, "a bare string"], [{"text": "no type"}]):
        with pytest.raises(InvalidInput, match="unknown type"):
            NewMessage.build("user", content)
        with app.pool.connection() as conn, pytest.raises(psycopg.errors.CheckViolation, match="unknown type"):
            _sql_insert(conn, conv.id, [content])
    assert app.store.list_messages(USER, conv.id) == []


def test_text_given_by_the_writer_is_kept_and_blank_text_is_derived(app):
    conv = app.store.create_conversation(USER, external_id="given")
    blocks = Jsonb([{"type": "text", "text": "from the blocks"}])
    with app.pool.connection() as conn:
        rows = conn.execute(
            "insert into memctx.messages (conversation_id, role, content, text) values "
            "(%(c)s, 'user', %(b)s, 'the writer''s own text'), (%(c)s, 'user', %(b)s, ' \t'), "
            "(%(c)s, 'user', %(b)s, null), (%(c)s, 'user', '[]', 'text only') returning text",
            {"c": conv.id, "b": blocks}).fetchall()
    assert [r["text"] for r in rows] == ["the writer's own text", "from the blocks", "from the blocks", "text only"]


def test_an_update_of_content_keeps_derived_text_in_step_and_drops_the_stale_embedding(app):
    conv = app.store.create_conversation(USER, external_id="edit")
    app.store.append_messages(USER, conv.id, [NewMessage.build("user", "the old words")])
    with app.pool.connection() as conn:
        conn.execute("insert into memctx.messages (conversation_id, role, content, text) values (%s, 'user', %s, 'mine')",
                     (conv.id, Jsonb([{"type": "text", "text": "blocks"}])))
        conn.execute("update memctx.messages set content = %s where conversation_id = %s",
                     (Jsonb([{"type": "text", "text": "the new words"}]), conv.id))
        rows = conn.execute("select text, embedding is null as unembedded, token_count from memctx.messages "
                            "where conversation_id = %s order by seq", (conv.id,)).fetchall()
    assert rows == [{"text": "the new words", "unembedded": True, "token_count": None},  # derived: follows
                    {"text": "mine", "unembedded": True, "token_count": None}]  # the writer's text: kept
    result = catchup.catch_up(app, USER, conv.id)
    assert result.embedded_messages == 2
    assert all(m.has_embedding and m.token_count for m in app.store.list_messages(USER, conv.id))


def test_sql_inserted_typed_messages_are_searchable_summarized_and_on_the_board(app):
    conv = app.store.create_conversation(USER, external_id="typed")
    turns = []
    for i in range(10):
        turns.append([{"type": "thinking", "text": "private"},
                      {"type": "text", "text": f"Turn {i}: shall we plan the trip to Lisbon in spring?"}])
        turns.append([{"type": "tool_call", "name": "book_ferry", "arguments": {"port": "Cacilhas", "day": i}},
                      {"type": "tool_result", "content": f"Booked ferry {i} across the Tagus to Cacilhas."},
                      {"type": "image", "caption": "a yellow tram climbing Alfama"}])
    with app.pool.connection() as conn:
        for i, blocks in enumerate(turns):
            _sql_insert(conn, conv.id, [blocks], role="user" if i % 2 == 0 else "assistant")
    result = catchup.catch_up(app, USER, conv.id, force_board=True)
    assert result.embedded_messages == 20 and result.summaries_written > 0 and result.board_updates > 0
    board = get_board(app, USER, conv.id)
    assert board is not None and "Lisbon" in board.summary + " ".join(map(str, board.key_facts))
    with app.pool.connection() as conn:
        summaries = [r["content"] for r in conn.execute(
            "select content from memctx.summaries where conversation_id = %s", (conv.id,))]
        lexical = conn.execute("select count(*) as n from memctx.messages where conversation_id = %s "
                               "and tsv @@ to_tsquery('english', 'tagus')", (conv.id,)).fetchone()["n"]
    assert summaries and all(s.strip() for s in summaries) and "private" not in " ".join(summaries)
    assert lexical == 10
    hits = search_memories(app, USER, "yellow tram in Alfama", conv.id)
    assert hits and any("yellow tram" in f.text for f in hits[0].fragments)


@pytest.mark.parametrize("scope", ["conversation", "user"])
def test_a_message_without_searchable_text_is_never_a_search_hit(app, scope):
    conv = app.store.create_conversation(USER, external_id=f"empty-{scope}")
    with app.pool.connection() as conn:  # plain SQL: the worker embeds these later
        _sql_insert(conn, conv.id, [[{"type": "thinking", "text": "my private plan about the weather"}],
                                    [{"type": "image", "url": "https://x/y.png"}]])
    app.store.append_messages(USER, conv.id, [NewMessage.build("assistant", [{"type": "thinking", "text": "hmm"}])])
    catchup.catch_up(app, USER, conv.id)
    with app.pool.connection() as conn:
        rows = conn.execute("select text, embedding is null as unembedded, token_count from memctx.messages "
                            "where conversation_id = %s", (conv.id,)).fetchall()
    assert rows == [{"text": "", "unembedded": True, "token_count": 0}] * 3
    for query in ("what is the weather plan?", "photo", "hello"):
        assert search_memories(app, USER, query, conv.id if scope == "conversation" else None, threshold=-1.0) == []


def test_a_sql_message_over_the_token_limit_is_kept_counted_and_embedded_by_its_head(app):
    tuned = dataclasses.replace(app, settings=app.settings.model_copy(update={"max_message_tokens": 40}))
    conv = app.store.create_conversation(USER, external_id="long")
    text = " ".join(f"Sentence {i} is about a different harbour, ship and sailor." for i in range(30))
    with pytest.raises(InvalidInput, match="over the limit of 40"):  # what ingest does with it
        MessageStore(app.pool, app.counter, app.embedder, max_message_tokens=40).prepare([NewMessage.build("user", text)])
    with app.pool.connection() as conn:
        _sql_insert(conn, conv.id, [[{"type": "text", "text": text}]])
    assert catchup.catch_up(tuned, USER, conv.id).embedded_messages == 1
    head, whole = app.embedder.embed([app.counter.truncate(text, 40), text])
    with app.pool.connection() as conn:
        row = conn.execute("select text, token_count, 1 - (embedding <=> %s) as head, 1 - (embedding <=> %s) as whole "
                           "from memctx.messages where conversation_id = %s", (head, whole, conv.id)).fetchone()
    assert row["text"] == text and row["token_count"] == app.counter.count(text) > 40
    assert row["head"] > 0.999 and row["whole"] < 0.99
