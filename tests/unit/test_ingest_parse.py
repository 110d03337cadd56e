"""Parsing LoCoMo and JSONL files: mapping, and errors that name the record."""

import json
from datetime import datetime, timezone

import pytest

from memctx.store.ingest import parse_jsonl, parse_locomo, read_text
from memctx.models import InvalidInput

SAMPLE = [{
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "Look at this!", "img_url": ["http://i/x.jpg"],
             "blip_caption": "a photo of a cat"},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Cute cat."},
        ],
        "session_2_date_time": "9:00 am on 1 June, 2023",
        "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "Hi again"}],
    },
    "qa": [], "observation": {"leak": "must not be read"},
}]


def test_locomo_mapping():
    [conv] = parse_locomo(json.dumps(SAMPLE))
    assert conv.external_id == "conv-x"
    roles = [(m.role, m.external_id, m.metadata["speaker"]) for m in conv.messages]
    assert roles == [("user", "D1:1", "Ana"), ("assistant", "D1:2", "Ben"), ("assistant", "D2:1", "Ben")]
    assert "[image: a photo of a cat]" in conv.messages[0].text
    assert conv.messages[0].created_at == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert conv.messages[1].created_at > conv.messages[0].created_at
    assert conv.messages[2].created_at.month == 6
    assert "leak" not in json.dumps(conv.metadata)


def test_locomo_unknown_speaker_names_the_turn():
    bad = json.loads(json.dumps(SAMPLE))
    bad[0]["conversation"]["session_1"][1]["speaker"] = "Zed"
    with pytest.raises(InvalidInput, match="conv-x D1:2"):
        parse_locomo(json.dumps(bad))


def test_malformed_json_is_reported_with_position():
    with pytest.raises(InvalidInput, match="malformed JSON"):
        parse_locomo('[{"sample_id": ')


def test_jsonl_groups_and_defaults_ids():
    text = "\n".join(json.dumps(o) for o in [
        {"conversation": "a", "role": "user", "content": "hi", "title": "A"},
        {"conversation": "b", "role": "user", "content": "other"},
        {"conversation": "a", "role": "assistant", "content": "hello", "id": "x9", "created_at": "2024-01-02T03:04:05Z"},
    ])
    convs = {c.external_id: c for c in parse_jsonl(text)}
    assert [m.external_id for m in convs["a"].messages] == ["#1", "x9"]
    assert convs["a"].title == "A" and convs["a"].messages[1].created_at.year == 2024


@pytest.mark.parametrize("line,match", [
    ('{"conversation": "a", "role": "user"', "malformed JSON"),
    ('{"conversation": "a", "role": "robot", "content": "x"}', "unknown role"),
    ('{"conversation": "a", "role": "user", "content": "a\\u0000b"}', "NUL"),
    ('{"conversation": "a", "role": "user", "content": "x", "user": "nope"}', "not a UUID"),
    ('{"role": "user", "content": "x"}', "needs conversation"),
    ('{"conversation": "a", "role": "user", "content": "x", "id": "#1"}', "id '#1' appears twice .*first at f.jsonl line 1"),
    ('{"conversation": "a", "role": "user", "content": ""}', "content is empty"),
    ('{"conversation": "a", "role": "user", "content": " \\n "}', "content is empty"),
    ('{"conversation": "a", "role": "user", "content": [{"type": "text", "text": ""}]}', "content is empty"),
    ('{"conversation": "", "role": "user", "content": "x"}', "conversation '' is empty"),
    ('{"conversation": null, "role": "user", "content": "x"}', "conversation None is empty"),
    ('{"conversation": "a", "role": "user", "content": "x", "metadata": {"score": NaN}}', "NaN is not valid JSON"),
    ('{"conversation": "a", "role": "user", "content": "x", "title": 7}', "title must be a string"),
])
def test_jsonl_errors_name_the_line(line, match):
    text = '{"conversation": "a", "role": "user", "content": "fine"}\n' + line
    with pytest.raises(InvalidInput, match=match) as info:
        parse_jsonl(text, "f.jsonl")
    assert "f.jsonl line 2" in str(info.value)


def test_a_message_without_text_but_with_an_image_or_tool_call_is_content():
    text = "\n".join(json.dumps(o) for o in [
        {"conversation": "a", "role": "user", "content": [{"type": "image", "url": "http://i/x.jpg"}]},
        {"conversation": "a", "role": "assistant", "content": [{"type": "thinking", "text": "hmm"}]},
    ])
    [conv] = parse_jsonl(text)
    assert len(conv.messages) == 2


def test_invalid_utf8_file_is_refused(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"conversation": "a", "role": "user", "content": "ok"}\n{"content": "\xff\xfe"}\n')
    with pytest.raises(InvalidInput, match="invalid UTF-8") as info:
        read_text(path)
    assert "line 2" in str(info.value)
