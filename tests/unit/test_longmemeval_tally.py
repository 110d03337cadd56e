"""The LongMemEval tally: evidence found whole, and found with a repeated sentence left out."""

from datetime import datetime, timezone
from uuid import uuid4

from memctx.assemble.types import Source
from memctx.evaluate.longmemeval import Instance, Session, _Tally

WHEN = datetime(2023, 5, 1, tzinfo=timezone.utc)
FIRST = "I'm looking for some book recommendations. I started The Nightingale last week."
SECOND = "I'm looking for some book recommendations. I just finished listening to The Power."


def _instance() -> Instance:
    turns = ({"role": "user", "content": FIRST, "has_answer": True},
             {"role": "user", "content": SECOND, "has_answer": True})
    return Instance(question_id="q1", question_type="multi-session", question="Which books?", answer="two",
                    question_date=WHEN, sessions=(Session("s1", WHEN, turns, "s1"),), answer_sessions=("s1",))


def _cited(*external_ids: str) -> list[Source]:
    return [Source(kind="message", id=uuid4(), section="memories", external_id=e) for e in external_ids]


def test_a_turn_quoted_with_its_repeated_opening_left_out_is_quoted_but_not_found_whole():
    texts = {"s1:0": FIRST, "s1:1": SECOND}
    context = f"user: {FIRST}\nuser: … I just finished listening to The Power."
    tally = _Tally()
    tally.add(_instance(), context, 30, texts, 1.0, _cited("s1:0", "s1:1"))
    out = tally.summary(latency=True)
    assert (out["evidence_found"], out["evidence_quoted"], out["evidence_cited"]) == (1, 2, 2)
    # a sentence of the turn missing from the context: neither whole nor quoted
    tally = _Tally()
    tally.add(_instance(), f"user: {FIRST}\nuser: … I just finished The Power.", 30, texts, 1.0,
              _cited("s1:0", "s1:1"))
    assert tally.summary(latency=False)["evidence_quoted"] == 1
    # not cited: whole counts, a turn merely echoed does not
    tally = _Tally()
    tally.add(_instance(), context, 30, texts, 1.0, _cited("s1:0"))
    assert tally.summary(latency=False)["evidence_quoted"] == 1
