"""Validation of what callers may write, before anything reaches the database."""

import pytest

from memctx.models import InvalidInput, NewMessage, text_from_blocks
from memctx.sql import parse_named_queries, QUERIES


def test_plain_string_becomes_one_text_block():
    m = NewMessage.build("user", "hello")
    assert m.blocks == [{"type": "text", "text": "hello"}] and m.text == "hello"


def test_typed_blocks_give_searchable_text_without_thinking():
    blocks = [
        {"type": "thinking", "text": "private chain of thought"},
        {"type": "text", "text": "Here is the photo."},
        {"type": "image", "url": "https://x/y.jpg", "caption": "a red bicycle"},
        {"type": "tool_call", "name": "weather", "arguments": {"city": "Lisbon"}},
        {"type": "tool_result", "content": "22°C and sunny"},
    ]
    text = text_from_blocks(blocks)
    assert "private" not in text
    assert "[image: a red bicycle]" in text and 'weather({"city": "Lisbon"})' in text and "22°C" in text


@pytest.mark.parametrize("kwargs,match", [
    ({"role": "bot", "content": "x"}, "unknown role"),
    ({"role": "user", "content": "a\x00b"}, "NUL"),
    ({"role": "user", "content": "\ud800"}, "UTF-8"),
    ({"role": "user", "content": []}, "non-empty"),
    ({"role": "user", "content": [{"type": "audio"}]}, "unknown type"),
    ({"role": "user", "content": [{"type": "text", "text": "ok"}], "metadata": {"k": "\x00"}}, "NUL"),
])
def test_bad_input_is_refused_with_the_record_named(kwargs, match):
    with pytest.raises(InvalidInput, match=match) as info:
        NewMessage.build(**kwargs, record="line 7")
    assert "line 7" in str(info.value)


def test_named_queries_parse_and_reject_duplicates():
    parsed = parse_named_queries("-- header\n-- name: a\nselect 1\n-- name: b\nselect 2\n")
    assert parsed == {"a": "select 1", "b": "select 2"}
    with pytest.raises(ValueError, match="twice"):
        parse_named_queries("-- name: a\nselect 1\n-- name: a\nselect 2\n")
    assert "copy_messages" in QUERIES
