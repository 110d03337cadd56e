"""Cutting long messages into passages: verbatim stretches of whole sentences, bounded, overlapping."""

import pytest

from memctx.passages import sentences, split_passages
from memctx.tokens import get_counter

COUNTER = get_counter()

REPLY = "\n".join(
    f"{i}. Day {i} of the itinerary: take the morning train to town number {i}, visit its old market, "
    f"and have dinner at the harbour restaurant that serves fish caught that day. Book ahead on weekends!"
    for i in range(1, 13))


def test_passages_are_verbatim_bounded_and_cover_the_whole_text():
    passages = split_passages(REPLY, COUNTER, 128, 32)
    assert len(passages) > 3
    assert [p.part for p in passages] == list(range(len(passages)))
    for p in passages:
        assert REPLY[p.start:p.end] == p.text and p.token_count == COUNTER.count(p.text)
        assert p.token_count <= 128 + 4  # counted sentence by sentence: off by at most a token or so each
    assert passages[0].start == 0 and passages[-1].end == len(REPLY)
    for a, b in zip(passages, passages[1:]):
        assert b.start > a.start and not REPLY[a.end:b.start].strip()  # forward, nothing but space skipped


def test_consecutive_passages_share_whole_sentences_up_to_the_overlap():
    passages = split_passages(REPLY, COUNTER, 128, 40)
    shared = [REPLY[b.start:a.end] for a, b in zip(passages, passages[1:]) if b.start < a.end]
    assert shared, "an overlap of 40 tokens holds the last short sentence"
    assert all(COUNTER.count(s) <= 40 + 2 for s in shared)
    assert all(s.rstrip().endswith(("!", ".")) for s in shared)
    no_overlap = split_passages(REPLY, COUNTER, 128, 0)
    assert all(b.start >= a.end for a, b in zip(no_overlap, no_overlap[1:]))


def test_a_sentence_longer_than_a_passage_is_cut_by_tokens():
    text = " ".join(f"word{i}" for i in range(400))  # one sentence of ~800 tokens
    passages = split_passages(text, COUNTER, 100, 20)
    assert len(passages) >= 8 and all(p.token_count <= 101 for p in passages)
    assert "".join(p.text for p in passages).replace(" ", "") == text.replace(" ", "")


def test_numbered_lists_keep_their_numbers_with_their_items():
    assert [REPLY[a:b][:6] for a, b in sentences(REPLY)][:3] == ["1. Day", "Book a", "2. Day"]


def test_a_short_text_is_one_passage_and_bad_sizes_are_refused():
    assert [p.text for p in split_passages("Just one line.", COUNTER, 128, 32)] == ["Just one line."]
    with pytest.raises(ValueError):
        split_passages(REPLY, COUNTER, 32, 32)
