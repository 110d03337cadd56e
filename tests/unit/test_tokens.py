"""Token counting is exact cl100k and never downloads."""

import pytest

from memctx.tokens import EncodingUnavailable, get_counter


def test_cl100k_counts_match_known_values():
    counter = get_counter("cl100k_base")
    assert counter.count("hello world") == 2
    assert counter.count("") == 0
    assert counter.count_many(["hello world", "tiktoken is great!"]) == [2, 6]


def test_special_token_text_is_counted_as_plain_text():
    assert get_counter().count("<|endoftext|>") > 1


def test_truncate_respects_the_limit():
    counter = get_counter()
    text = "one two three four five six seven"
    cut = counter.truncate(text, 3)
    assert counter.count(cut) <= 3 and text.startswith(cut)
    assert counter.truncate(text, 100) == text


def test_encodings_that_would_download_are_refused_clearly():
    with pytest.raises(EncodingUnavailable, match="never downloads"):
        get_counter("o200k_base")
