"""Instances built without the dataclass's __init__ (memctx.frozen) are the ones it builds."""

from dataclasses import dataclass, fields, replace
from datetime import datetime, timezone
from uuid import uuid4

import pytest

from memctx.assemble.types import Source
from memctx.frozen import frozen_new
from memctx.retrieve.types import Fragment, Memory, Passage, Provenance


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
    assert list(built.__dict__.items()) == list(expected.__dict__.items())
    assert {f.name: getattr(built, f.name) for f in fields(Fragment)} == \
        {f.name: getattr(expected, f.name) for f in fields(Fragment)}
    with pytest.raises(AttributeError):  # still frozen
        built.text = "changed"


def test_an_excerpt_is_the_message_with_its_passage_in_place_of_its_text():
    whole = Fragment.from_row(_row(passage_id=uuid4(), passage_text="The relevant passage.", passage_tokens=4))
    excerpt = whole.excerpt()
    assert excerpt == replace(whole, text="The relevant passage.", token_count=4, passage=None, excerpt_of=160)
    assert list(excerpt.__dict__) == [f.name for f in fields(Fragment)]
    assert repr(excerpt) == repr(replace(whole, text="The relevant passage.", token_count=4, passage=None,
                                         excerpt_of=160))
    assert whole.text.startswith("A long reply.") and whole.passage is not None  # the whole is untouched
    with pytest.raises(ValueError):
        Fragment.from_row(_row(passage_id=None)).excerpt()


def test_defaults_fill_the_fields_not_given_and_a_class_with_checks_is_refused():
    source = frozen_new(Source, {"kind": "message", "id": uuid4(), "section": "memories", "seq": 4, "detail": "hit"})
    assert source == Source(kind="message", id=source.id, section="memories", seq=4, detail="hit")
    assert source.__dict__ == Source(kind="message", id=source.id, section="memories", seq=4, detail="hit").__dict__
    assert list(source.__dict__) == [f.name for f in fields(Source)]  # in the order the __init__ sets them
    with pytest.raises(TypeError):  # a field without a default must be given
        frozen_new(Source, {"kind": "message", "id": uuid4()})
    fragment = Fragment.from_row(_row(passage_id=None))
    provenance = frozen_new(Provenance, {"ranks": {"dense": 1}, "speaker_match": False, "first_seq": 7, "last_seq": 7})
    memory = frozen_new(Memory, {"kind": "message", "id": fragment.id, "conversation_id": fragment.conversation_id,
                                 "fragments": (fragment,), "score": 0.5, "similarity": 0.7, "provenance": provenance})
    assert memory == Memory(kind="message", id=fragment.id, conversation_id=fragment.conversation_id,
                            fragments=(fragment,), score=0.5, similarity=0.7,
                            provenance=Provenance(ranks={"dense": 1}, first_seq=7, last_seq=7))
    assert memory.as_json() == Memory(kind="message", id=fragment.id, conversation_id=fragment.conversation_id,
                                      fragments=(fragment,), score=0.5, similarity=0.7,
                                      provenance=Provenance(ranks={"dense": 1}, first_seq=7, last_seq=7)).as_json()

    @dataclass(frozen=True)
    class Checked:
        n: int

        def __post_init__(self):
            if self.n < 0:
                raise ValueError("negative")

    with pytest.raises(TypeError):  # its checks would be skipped
        frozen_new(Checked, {"n": -1})
