"""Key information per token: which gold observations a context keeps, and at what cost."""

from __future__ import annotations

from memctx.evaluate.retention import Gold, Observation, RetentionTally, key_sentence

TURNS = {
    "D2:1": "Hey Caroline, since we last chatted, I've had a lot going on. I ran a charity race for mental "
            "health last Saturday – it was really rewarding. Really made me think about taking care of our minds.",
    "D2:2": "That charity race sounds great, Mel!",
    "D3:4": "Yes! It was.",
}
RACE = Observation("conv-x", "Melanie ran a charity race for mental health last Saturday.", ("D2:1",))
SHORT = Observation("conv-x", "Caroline enjoyed the race.", ("D3:4",))


def test_the_key_sentence_is_the_one_that_says_the_observation():
    assert key_sentence(RACE.text, TURNS["D2:1"]) == (
        " i ran a charity race for mental health last saturday it was really rewarding ")
    # under five words the sentence is no evidence on its own: the whole turn is the key
    assert key_sentence(SHORT.text, TURNS["D3:4"]) == " yes it was "


def test_a_summary_quoting_the_key_sentence_keeps_the_observation_but_not_whole():
    gold = Gold.of([RACE], TURNS)
    summary = "[25 May 2023]\nMelanie: I ran a charity race for mental health last Saturday – it was really rewarding."
    assert gold.kept(summary) == (1, 0)
    assert gold.kept(f"Melanie: {TURNS['D2:1']}") == (1, 1)  # the whole turn
    assert gold.kept("Melanie: I went running for a good cause.") == (0, 0)  # a paraphrase keeps no evidence
    assert gold.kept("Melanie: Really made me think about taking care of our minds.") == (0, 0)  # another sentence


def test_observations_outside_the_text_s_turns_are_not_counted_and_tokens_divide():
    gold = Gold.of([RACE, Observation("conv-x", "Later fact.", ("D9:9",))], TURNS)
    assert len(gold) == 1
    tally = RetentionTally()
    tally.add(gold, TURNS["D2:1"], 50)
    tally.add(gold, "nothing of it", 150)
    assert tally.summary() == {"kept_per_100_tokens": 0.5, "kept_share": 0.5, "kept_by_sentence_only": 0,
                               "kept": 1, "observations": 2, "tokens": 200}
