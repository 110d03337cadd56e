"""The evaluation's scoring rules (pure): evidence parsing, normalization, recall, containment."""

from memctx.evaluate.locomo import contains_answer, evidence_recall, normalize, parse_evidence


def test_evidence_is_parsed_leniently():
    ids, bad = parse_evidence(["D3:11", "D8:6; D9:17", "D:11:26", "D30:05", "nonsense", ""])
    assert ids == ("D3:11", "D8:6", "D9:17", "D11:26", "D30:5")
    assert bad == ("nonsense",)


def test_normalize_drops_case_punctuation_and_articles():
    assert normalize("The Sunday before 25 May, 2023!") == "sunday before 25 may 2023"


def test_containment_matches_whole_words_only():
    assert contains_answer("She said: the answer is Adoption agencies.", "adoption agencies")
    assert not contains_answer("catalog", "cat")
    assert contains_answer("born in 2022", "2022")
    assert contains_answer("anything", None) is None


def test_recall_counts_verbatim_turns_only():
    texts = {"D1:1": "I adopted a cat.", "D1:2": "Nice, what's its name?"}
    context = "[8 May 2023] Ana: I adopted a cat.\nSummary: Ben asked the cat's name."
    assert evidence_recall(context, ["D1:1", "D1:2"], texts) == 0.5
    assert evidence_recall(context, ["D9:9"], texts) is None  # skipped: names no stored turn
