"""The board measure's pure parts: ROUGE-L, lead-k, and detector scoring on labelled utterances."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from memctx.evaluate.board import LABEL_SETS, Labelled, lead, load_labels, rouge_l, score_labels
from memctx.summarize.types import SourceText
from memctx.tokens import get_counter


def test_rouge_l_is_the_lcs_f1_of_words():
    assert rouge_l("the cat sat on the mat", "the cat sat on the mat") == 1.0
    assert rouge_l("", "anything") == 0.0 and rouge_l("dog", "cat") == 0.0
    # LCS "the cat the mat" = 4 of 6 and 4 of 5 words.
    assert abs(rouge_l("the cat sat on the mat", "the cat saw the mat") - 2 * (4 / 6) * (4 / 5) / (4 / 6 + 4 / 5)) < 1e-9


def test_lead_k_is_the_first_turns_cut_to_the_length():
    counter = get_counter()
    turns = [SourceText(UUID(int=i), "message", "user", "Ana", f"Turn number {i} says something long enough.", i, i,
                        datetime(2023, 5, 8)) for i in range(1, 20)]
    text = lead(turns, 20, counter)
    assert text.startswith("Ana: Turn number 1") and counter.count(text) <= 20


def test_detector_scores_count_hits_misses_and_false_alarms():
    rows = [Labelled("s", "D1:1", "Ana", "I'll send you the photos tomorrow.", frozenset({"commitment"})),
            Labelled("s", "D1:2", "Ana", "Where did you go?", frozenset({"question"})),
            Labelled("s", "D1:3", "Ana", "Thanks, that means a lot!", frozenset({"none"}))]
    scores = score_labels(rows)
    assert scores["action_items"] == {"precision": 1.0, "recall": 1.0, "labelled": 1, "detected": 1}
    assert scores["questions"]["recall"] == 1.0 and scores["constraints"]["detected"] == 0


def test_the_labelled_sets_are_large_well_formed_and_disjoint():
    tuning, holdout = load_labels(LABEL_SETS["tuning"]), load_labels(LABEL_SETS["holdout"])
    assert len(tuning) >= 300 and len(holdout) >= 100
    for rows in (tuning, holdout):
        assert len({(r.sample_id, r.dia_id) for r in rows}) == len(rows)
        assert {label for r in rows for label in r.labels} <= {"preference", "correction", "commitment", "question",
                                                               "none"}
    assert not {(r.sample_id, r.dia_id) for r in tuning} & {(r.sample_id, r.dia_id) for r in holdout}
