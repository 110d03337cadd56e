"""A summary is never longer than what it covers, whatever its summarizer wrote."""

from hypothesis import given, strategies as st

from memctx.summarize.length import capped, summary_cap
from memctx.summarize.types import SummaryDraft
from memctx.tokens import get_counter

COUNTER = get_counter()


def test_the_cap_is_half_of_what_is_covered_and_never_over_the_length():
    assert summary_cap(147, 200) == 73  # the L2 summary of seq 1–9 that was 165 tokens of 147
    assert summary_cap(5000, 200) == 200
    assert summary_cap(1, 200) == 1


def test_a_draft_within_the_cap_is_kept_as_written():
    draft = SummaryDraft(content="Ana booked the pottery class.", token_count=6, summarizer="extractive")
    assert capped(draft, 6, COUNTER) is draft


def test_an_overshooting_draft_is_cut_and_recounted_by_the_apps_counter():
    text = "Priya and Tomás land in Lisbon on 25 May and fly home on 31 May. " * 20
    draft = SummaryDraft(content=text, token_count=3, summarizer="llm")  # it under-reports its length
    out = capped(draft, 40, COUNTER)
    assert text.startswith(out.content.rstrip("\ufffd")) and out.summarizer == "llm"  # a cut may split "á"
    assert out.token_count == COUNTER.count(out.content) <= 40


@given(st.text(min_size=1, max_size=400), st.integers(min_value=1, max_value=60))
def test_any_text_is_cut_to_at_most_the_cap(text, cap):
    out = capped(SummaryDraft(content=text, token_count=0, summarizer="llm"), cap, COUNTER)
    assert out.token_count == COUNTER.count(out.content) <= cap
