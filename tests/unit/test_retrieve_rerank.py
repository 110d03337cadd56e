"""The rerank seam: a reranker reorders memories; the default keeps the fused order."""

from datetime import datetime, timezone
from uuid import uuid4

from memctx.retrieve.rerank import NoRerank, TermOverlapReranker
from memctx.retrieve.types import Fragment, Memory

CONV = uuid4()


def _memory(text: str, score: float) -> Memory:
    fid = uuid4()
    frag = Fragment(id=fid, conversation_id=CONV, role="user", text=text, seq=1,
                    time=datetime(2023, 5, 8, tzinfo=timezone.utc))
    return Memory(kind="message", id=fid, conversation_id=CONV, fragments=(frag,), score=score, similarity=0.5)


def test_no_rerank_keeps_order():
    ms = [_memory("a", 0.3), _memory("b", 0.2)]
    assert NoRerank().rerank("q", ms) == ms


def test_term_overlap_promotes_memories_holding_the_query_words():
    weak_but_exact = _memory("I adopted a puppy named Rex", 0.010)
    strong_but_vague = _memory("We talked about animals", 0.012)
    out = TermOverlapReranker(weight=1.0).rerank("adopted puppy", [strong_but_vague, weak_but_exact])
    assert out[0].text == weak_but_exact.text
    assert out[0].score > weak_but_exact.score
