"""Weighted RRF and query analysis: the ranking a user sees depends on these rules."""

import pytest

from memctx.config import Settings
from memctx.retrieve.fusion import FusionWeights, fuse, rrf
from memctx.retrieve.lexical import analyze
from memctx.retrieve.queries import PLANS, SEARCHES, compose, compose_summaries
from memctx.retrieve.search import SearchOptions
from memctx.retrieve.signals import SIGNALS, Signal, ranks_of
from memctx.retrieve.types import Provenance


def test_rrf_sums_weighted_reciprocal_ranks():
    w = FusionWeights.of(dense=0.5, lexical=0.3, recency=0.2, k=60)
    assert rrf({"dense": 1, "lexical": None, "recency": None}, w) == pytest.approx(0.5 / 61)
    assert rrf({"dense": 1, "lexical": 2, "recency": 3}, w) == pytest.approx(0.5 / 61 + 0.3 / 62 + 0.2 / 63)


def test_fuse_prefers_items_found_by_several_lists():
    w = FusionWeights()
    order = fuse({"both": {"dense": 3, "lexical": 3, "recency": None},
                  "dense_top": {"dense": 1, "lexical": None, "recency": None},
                  "lexical_top": {"dense": None, "lexical": 1, "recency": None}}, w)
    assert [key for key, _ in order] == ["both", "dense_top", "lexical_top"]


def test_zero_weight_silences_a_list():
    w = FusionWeights.of(dense=1, lexical=1, recency=0)
    assert rrf({"dense": None, "lexical": None, "recency": 1}, w) == 0


def test_negative_weights_are_refused():
    with pytest.raises(ValueError):
        FusionWeights.of(dense=-1)


def test_an_unknown_signal_is_refused():
    with pytest.raises(ValueError, match="unknown retrieval signal"):
        FusionWeights.of(recency=0.1, clicks=0.5)


def test_one_signal_list_drives_settings_ranks_and_provenance():
    assert all(s.setting in Settings.model_fields for s in SIGNALS)  # each signal has its weight setting
    weights = SearchOptions.from_settings(Settings()).weights.by_signal
    assert weights == {s.name: getattr(Settings(), s.setting) for s in SIGNALS}
    row = {"dense_rank": 2, "lexical_rank": None, "recent_rank": 5}
    provenance = Provenance(ranks=ranks_of(row), first_seq=3, last_seq=4)
    assert provenance.matched_by == ["dense", "recency"]
    assert provenance.as_json() == {"dense_rank": 2, "lexical_rank": None, "recent_rank": 5, "speaker_match": False,
                                    "matched_by": ["dense", "recency"], "first_seq": 3, "last_seq": 4}


def test_the_signal_list_drives_the_search_queries_rank_columns():
    clicks = Signal("clicks", "clicks", 0.0)  # a new signal: its CTE, and one entry in the list
    for name, plan in ((n, p) for n in SEARCHES for p in PLANS):
        text = compose(name, (*SIGNALS, clicks), plan=plan)
        assert "{" not in text and "}" not in text  # every placeholder filled
        assert text.count("select 'clicks' as signal, id, conversation_id, seq, rank from \"clicks\"") == 1
        assert text.count('min(c.rank) filter (where c.signal = \'clicks\') as "clicks_rank"') == 1
        assert text.count('"hits"."clicks_rank"') == 1  # in the rows returned
        assert text.count("m.created_at >= %(since)s::timestamptz") == 1  # the scope's time range: once
        if plan != "exact":  # and in message_terms (migration 0026): the matches', the common terms'
            assert text.count("mt.created_at >= %(since)s::timestamptz") == 2
    summaries = compose_summaries((*SIGNALS, clicks))
    assert "{" not in summaries and "}" not in summaries
    # summaries are ranked on the relevance lists only, under the turns' column names
    assert ('"sr"."dense_rank" as "dense_rank", "sr"."lexical_rank" as "lexical_rank", '
            'null::bigint as "recent_rank", null::bigint as "clicks_rank", true as is_hit') in summaries


def test_analysis_drops_filler_and_turns_speaker_names_into_a_signal():
    a = analyze("When did Caroline go to the LGBTQ support group?", ["Caroline", "Melanie"])
    assert a.terms == ("lgbtq", "support", "group")
    assert a.speakers == ("Caroline",)
    assert a.temporal
    assert a.tsquery == "lgbtq | support | group"


def test_analysis_keeps_names_of_any_script_whole_and_drops_every_stop_word():
    a = analyze("What did Melanie's friend Tomás do back in 2022 with one of the São Paulo crew?", ["Melanie"])
    assert a.terms == ("friend", "tomás", "2022", "são", "paulo", "crew")  # not "tom", "s"; not "back", "one"
    assert a.speakers == ("Melanie",)


def test_tsquery_is_safe_for_hostile_input():
    a = analyze("foo & !bar | 'baz':* <-> (qux)")
    assert set(a.tsquery.replace("|", " ").split()) == {"foo", "bar", "baz", "qux"}
    assert analyze("the of and").tsquery == ""


def _turn(seq, role, text, *, hit=False, dense=None, lexical=None):
    import uuid as _uuid
    return {"kind": "message", "id": _uuid.UUID(int=seq), "conversation_id": _uuid.UUID(int=0), "seq": seq,
            "role": role, "text": text, "external_id": f"D1:{seq}", "token_count": 5, "created_at": None,
            "speaker": role, "session": 1, "similarity": 0.5, "dense_rank": dense, "lexical_rank": lexical,
            "recent_rank": None, "is_hit": hit}


@pytest.mark.parametrize("hit_text, partner_ranks, paired", [
    ("I painted a lake sunrise last year.", (None, None), False),  # the reply adds nothing the search saw
    ("I painted a lake sunrise last year.", (31, None), False),
    ("I painted a lake sunrise last year.", (None, 30), True),  # the reply is relevant on its own
    ("What did you paint last year?", (None, None), True),  # a question: its answer is the reply
])
def test_a_hit_brings_its_partner_turn_only_when_the_partner_adds_something(hit_text, partner_ranks, paired):
    from memctx.retrieve.search import build_memories

    rows = [_turn(1, "user", hit_text, hit=True, dense=1, lexical=1),
            _turn(2, "assistant", "Wow, that sounds lovely.", dense=partner_ranks[0], lexical=partner_ranks[1])]
    (memory,) = [m for m in build_memories(rows, analyze("painting"), SearchOptions(threshold=-1.0), -1.0)
                 if m.id == rows[0]["id"]]
    assert [f.seq for f in memory.fragments] == ([1, 2] if paired else [1])
    always = build_memories(rows, analyze("painting"), SearchOptions(threshold=-1.0, pair_rank=None), -1.0)
    assert [f.seq for f in always[0].fragments] == [1, 2]


def test_a_limit_builds_the_first_memories_of_the_whole_list():
    """Memories are built best first, a hit covered by a better one's pair skipped: with a limit,
    the first `limit` of the list built without one."""
    from memctx.retrieve.search import build_memories

    rows = [_turn(seq, "user" if seq % 2 else "assistant", f"turn {seq}?" if seq % 3 == 0 else f"turn {seq}",
                  hit=seq % 4 != 2, dense=(seq * 7) % 13 + 1, lexical=(seq * 5) % 11 + 1 if seq % 2 else None)
            for seq in range(1, 25)]
    opts = SearchOptions(threshold=-1.0)
    whole = build_memories(rows, analyze("turn"), opts, -1.0)
    assert len(whole) > 10 and any(len(m.fragments) > 1 for m in whole)  # pairs covered some hits
    for limit in (1, 5, 10, len(whole), len(whole) + 5):
        assert build_memories(rows, analyze("turn"), opts, -1.0, limit) == whole[:limit]


def test_named_time_ranges_reach_back_from_now_in_utc():
    from datetime import datetime, timezone

    from memctx.retrieve.search import NAMED_RANGES, named_range

    now = datetime(2024, 5, 8, 15, 30, tzinfo=timezone.utc)
    assert named_range("today", now) == (datetime(2024, 5, 8, tzinfo=timezone.utc), None)
    assert named_range("week", now) == (datetime(2024, 5, 1, 15, 30, tzinfo=timezone.utc), None)
    assert named_range("month", now) == (datetime(2024, 4, 8, 15, 30, tzinfo=timezone.utc), None)
    assert named_range("all", now) is None and set(NAMED_RANGES) == {"today", "week", "month", "all"}


def test_a_small_memory_section_takes_only_the_best_ranked_partners():
    from memctx.assemble.context import PAIR_FULL_SHARE, pair_rank

    assert pair_rank(30, PAIR_FULL_SHARE) == pair_rank(30, 10 * PAIR_FULL_SHARE) == 30
    assert pair_rank(30, PAIR_FULL_SHARE // 2) == 15
    assert pair_rank(30, 10) == 1  # never below the best rank
    assert pair_rank(None, 10) is None  # "always pair" stays always
