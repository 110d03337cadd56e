"""The working context's caches serve only what their inputs say: an edited board line or turn
is read anew, and two boards with the same correction keep their own sources."""

from __future__ import annotations

from datetime import datetime, timezone
from uuid import UUID

from memctx.assemble.history import extractive_compressor
from memctx.assemble.corrections import corrections_of
from memctx.assemble.repeats import elide_said, key
from memctx.summarize.extractive import ExtractiveSummarizer
from memctx.summarize.types import SourceText
from memctx.tokens import get_counter

COUNTER = get_counter()
CORRECTION = "Actually, the dinner is on Friday, not Thursday."


def test_the_same_correction_on_two_boards_cites_each_boards_own_turns():
    one, two = str(UUID(int=1)), str(UUID(int=2))
    first = corrections_of([{"text": CORRECTION, "group": "Priya", "sources": [{"id": one}]}])
    second = corrections_of([{"text": CORRECTION, "group": "Priya", "sources": [{"id": two}]}])
    assert [(c.who, c.text, c.sources) for c in first] == [("Priya", CORRECTION, frozenset({one}))]
    assert [(c.who, c.text, c.sources) for c in second] == [("Priya", CORRECTION, frozenset({two}))]


def test_a_board_line_edited_out_of_being_a_correction_is_no_longer_one():
    assert corrections_of([{"text": CORRECTION, "group": "Priya"}])
    assert corrections_of([{"text": "The dinner is on Friday.", "group": "Priya"}]) == []
    assert corrections_of([{"text": CORRECTION}]) == []  # nobody to say who said it
    assert [c.who for c in corrections_of([f"Priya: {CORRECTION}"])] == ["Priya"]  # the person from the text


def _turn(seq: int, text: str, speaker: str = "Caroline") -> dict:
    return {"id": UUID(int=seq), "role": "user", "speaker": speaker, "content": text, "last_seq": seq,
            "created_at": datetime(2023, 5, 8, 13, seq, tzinfo=timezone.utc)}


TURNS = [_turn(1, "I went to the LGBTQ support group yesterday and it was so powerful."),
         _turn(2, "The transgender stories were inspiring; I want to study counseling next year.", "Melanie"),
         _turn(3, "I painted a sunrise over the lake last weekend with my kids."),
         _turn(4, "We are planning a camping trip to the mountains in July.", "Melanie")]


def _uncached(turns: list[dict], max_tokens: int) -> str | None:
    sources = [SourceText(id=t["id"], kind="message", role=t["role"], speaker=t["speaker"], text=t["content"],
                          first_seq=t["last_seq"], last_seq=t["last_seq"], created_at=t["created_at"])
               for t in turns]
    return ExtractiveSummarizer(COUNTER).summarize(sources, level=1, is_master=False,
                                                   max_tokens=max_tokens).content or None


def test_compressed_turns_are_the_summarizers_and_an_edited_turn_is_summarized_anew():
    compress = extractive_compressor(COUNTER)
    first = compress(TURNS, 60)
    assert first and "counseling" in first
    assert compress([dict(t) for t in TURNS], 60) == first == _uncached(TURNS, 60)
    edited = [*TURNS[:1], {**TURNS[1], "content": "The stories were inspiring; I want to study pottery next year."},
              *TURNS[2:]]
    again = compress(edited, 60)
    assert again == _uncached(edited, 60) and "counseling" not in again and "pottery" in again
    assert compress(TURNS, 30) == _uncached(TURNS, 30)  # the length is part of the key


def test_elide_said_leaves_a_turn_with_a_sentence_said_twice_to_say_it_once():
    said: set[str] = set()
    text = "We adopted a puppy named Oscar. We adopted a puppy named Oscar. He loves the beach a lot."
    assert elide_said(text, said) == "We adopted a puppy named Oscar. … He loves the beach a lot."
    assert key("He loves the beach a lot.") in said
