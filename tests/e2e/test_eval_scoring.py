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


def test_the_headline_pools_gold_turns_of_categories_1_to_4_and_reports_the_rest_beside_it():
    from memctx.evaluate.locomo import Question
    from memctx.evaluate.run import _Tally

    texts = {f"D1:{i}": f"turn number {i} here" for i in range(1, 7)}
    context = "turn number 1 here\nturn number 2 here\nturn number 6 here"

    def q(category, *evidence):
        return Question("s", 0, "?", None, category, evidence, ())

    tally = _Tally()
    tally.add(q(4, "D1:1"), context, 10, texts)  # 1 of 1
    tally.add(q(1, "D1:2", "D1:3", "D1:4", "D1:5"), context, 10, texts)  # 1 of 4
    tally.add(q(5, "D1:6"), context, 10, texts)  # adversarial: beside the headline, never in it
    out = tally.summary(latency=False)
    assert (out["evidence_found"], out["evidence_gold"], out["evidence_recall"]) == (2, 5, 0.4)
    assert out["evidence_recall_question_mean"] == round((1 + 0.25 + 1) / 3, 4)
    assert out["evidence_recall_adversarial"] == 1.0
