"""Fragments built without the dataclass's __init__ are the fragments its __init__ builds."""

from dataclasses import fields, replace
from datetime import datetime, timezone
from uuid import uuid4

import pytest

from memctx.retrieve.types import Fragment, Passage


def _row(**extra):
    return {"id": uuid4(), "conversation_id": uuid4(), "role": "assistant", "text": "A long reply. " * 40,
            "seq": 7, "created_at": datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc), "external_id": "D1:7",
            "speaker": None, "token_count": 160, "session": 1, **extra}


def test_a_fragment_from_a_row_is_the_fragment_its_fields_make():
    row = _row(passage_id=uuid4(), passage_text="The relevant passage.", passage_tokens=4)
    built = Fragment.from_row(row)
    expected = Fragment(id=row["id"], conversation_id=row["conversation_id"], role="assistant", text=row["text"],
                        seq=7, time=row["created_at"], external_id="D1:7", speaker=None, token_count=160, session=1,
                        passage=Passage(row["passage_id"], "The relevant passage.", 4))
    assert built == expected and hash(built) == hash(expected) and repr(built) == repr(expected)
    assert {f.name: getattr(built, f.name) for f in fields(Fragment)} == \
        {f.name: getattr(expected, f.name) for f in fields(Fragment)}
    with pytest.raises(AttributeError):  # still frozen
        built.text = "changed"


def test_an_excerpt_is_the_message_with_its_passage_in_place_of_its_text():
    whole = Fragment.from_row(_row(passage_id=uuid4(), passage_text="The relevant passage.", passage_tokens=4))
    excerpt = whole.excerpt()
    assert excerpt == replace(whole, text="The relevant passage.", token_count=4, passage=None, excerpt_of=160)
    assert repr(excerpt) == repr(replace(whole, text="The relevant passage.", token_count=4, passage=None,
                                         excerpt_of=160))
    assert whole.text.startswith("A long reply.") and whole.passage is not None  # the whole is untouched
    with pytest.raises(ValueError):
        Fragment.from_row(_row(passage_id=None)).excerpt()
