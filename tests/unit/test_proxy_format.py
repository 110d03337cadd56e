"""The proxy's reading of OpenAI chat requests and replies: what is already stored, what is the tool loop, how
messages become typed blocks, and how a stream's chunks add up to the reply that is stored."""

from __future__ import annotations

import json

import pytest

from memctx.api.chat_format import (StreamReply, completion_as_stream, message_key, reply_message, split_turn,
                             to_new_message, unstored)
from memctx.models import InvalidInput

CALL = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}


def test_the_system_prompt_is_kept_and_the_last_user_message_is_the_query():
    turn = split_turn([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"},
                       {"role": "assistant", "content": "hello"}, {"role": "user", "content": "how are you?"}])
    assert turn.system_prompt == "Be brief."
    assert turn.query_text == "how are you?"
    assert [m["content"] for m in turn.talk] == ["hi", "hello", "how are you?"] and turn.query_index == 2
    assert turn.tail == []


def test_in_a_tool_loop_the_loop_is_passed_as_it_is():
    loop = [{"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "12 C"}]
    turn = split_turn([{"role": "user", "content": "weather in Oslo?"}, *loop])
    assert turn.query_text == "weather in Oslo?" and turn.query_index == 0
    assert turn.tail == loop


@pytest.mark.parametrize("sent, stored, first_new", [
    (["u1"], [], 0),  # a new conversation: everything is new
    (["u1", "a1", "u2", "a2", "u3"], [], 0),  # a history memctx never saw: all of it, in order
    (["u1"], ["u1"], 1),  # a retry: the last stored message, no reply after it
    (["u1", "a1", "u2"], ["u1", "a1", "u2"], 3),  # a retry with the whole history
    (["u1", "a1", "u2"], ["u1", "a1"], 2),  # the usual turn: the new message only
    (["u2"], ["u1", "a1"], 0),  # a client that sends only its new message
    (["yes"], ["yes", "a1"], 0),  # said again after a reply: a new turn, not a retry
    (["u1", "A-edited", "u2"], ["u1", "a1"], 2),  # the client changed a stored reply: memory keeps its own
    (["a3", "u4"], ["u1", "a1", "u2", "a2", "u3", "a3"], 1),  # a client that sends a window of its history
    (["u1", "a1", "yes", "a2", "yes"], ["u1", "a1", "yes", "a2"], 4),
    (["u1", "a1", "u3"], ["u1", "a1", "u2", "a2"], 2),  # another device added u2, a2: only u3 is new
    (["u1", "a1", "yes"], ["u1", "a1", "yes", "a2"], 2),  # said again: a reply was stored after the first
])
def test_the_messages_a_conversation_already_holds_are_not_new(sent, stored, first_new):
    assert unstored(sent, stored).first_new == first_new


def test_a_stored_message_is_recognised_by_role_and_content():
    stored = to_new_message({"role": "user", "content": "hi"})
    assert message_key("user", [{"text": "hi", "type": "text"}]) == message_key(stored.role, stored.blocks)
    assert message_key("assistant", stored.blocks) != message_key(stored.role, stored.blocks)


def test_a_request_without_a_user_message_is_refused():
    with pytest.raises(InvalidInput, match="role 'user'"):
        split_turn([{"role": "system", "content": "x"}])


def test_messages_become_typed_blocks():
    user = to_new_message({"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                                       {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]})
    assert user.blocks == [{"type": "text", "text": "what is this?"}, {"type": "image", "url": "https://x/y.png"}]
    tool = to_new_message({"role": "tool", "tool_call_id": "call_1", "content": "12 C"})
    assert tool.blocks == [{"type": "tool_result", "content": "12 C", "tool_call_id": "call_1"}]
    assert tool.text == "12 C"


def test_a_reply_with_tool_calls_is_stored_as_tool_call_blocks():
    reply = reply_message({"choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                                                "tool_calls": [CALL]}}]})
    assert reply.role == "assistant"
    assert reply.blocks == [{"type": "tool_call", "id": "call_1", "name": "weather", "arguments": '{"city": "Oslo"}'}]
    assert reply.text == '[tool call weather({"city": "Oslo"})]'


def _sse(chunks):
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def test_a_stream_adds_up_to_its_completion_whatever_the_byte_boundaries():
    head = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    body = _sse([{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}}]},
                 {**head, "choices": [{"index": 0, "delta": {"content": "lo"}}]},
                 {**head, "choices": [{"index": 0, "delta": {"tool_calls": [
                     {"index": 0, "id": "call_1", "function": {"name": "weather", "arguments": '{"ci'}}]}}]},
                 {**head, "choices": [{"index": 0, "delta": {"tool_calls": [
                     {"index": 0, "function": {"arguments": 'ty": "Oslo"}'}}]}, "finish_reason": "tool_calls"}]}])
    reply = StreamReply()
    for i in range(0, len(body), 7):  # split anywhere, even inside a line
        reply.feed(body[i:i + 7])
    assert reply.done
    completion = reply.completion()
    message = completion["choices"][0]["message"]
    assert message["content"] == "Hello"
    assert message["tool_calls"] == [CALL]
    assert completion["choices"][0]["finish_reason"] == "tool_calls"
    replayed = StreamReply()
    for chunk in completion_as_stream(completion):
        replayed.feed(chunk)
    assert replayed.completion()["choices"] == completion["choices"]
