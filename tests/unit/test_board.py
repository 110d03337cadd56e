"""The summary board rules: each field, incremental updates, idempotence and the jsonb round trip."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from memctx.summarize.board import board_from_fields, update_board
from memctx.summarize.extractive import ExtractiveSummarizer
from memctx.summarize.types import SECTION, Board, SourceText
from memctx.tokens import get_counter

CONSTRAINTS_CAP = SECTION["constraints"].cap
KEY_FACTS_CAP = SECTION["key_facts"].cap
COUNTER = get_counter()
SUMMARIZER = ExtractiveSummarizer(COUNTER)
MAY_8 = datetime(2023, 5, 8, 13, 56)


def msg(seq: int, speaker: str | None, text: str, role: str = "user") -> SourceText:
    return SourceText(UUID(int=seq), "message", role, speaker, text, seq, seq, MAY_8, 0)


def update(board: Board, *messages: SourceText, max_tokens: int = 150) -> Board:
    return SUMMARIZER.update_board(board, list(messages), max_tokens=max_tokens)


def conversation(start: int, turns: list[tuple[str, str]]) -> list[SourceText]:
    return [msg(start + i, speaker, text) for i, (speaker, text) in enumerate(turns)]


def test_bookkeeping_and_idempotent_retry() -> None:
    messages = conversation(1, [("Caroline", "I adopted a puppy named Oscar."), ("Melanie", "So cute!")])
    board = update(Board.empty(), *messages)
    assert (board.message_count, board.last_seq) == (2, 2)
    assert update(board, *messages) is board  # a retried batch changes nothing
    later = update(board, *messages, msg(3, "Caroline", "He is 3 months old."))
    assert (later.message_count, later.last_seq) == (3, 3)


def test_summary_keeps_facts_within_budget_and_carries_forward() -> None:
    board = update(Board.empty(), *conversation(1, [
        ("Caroline", "Hey Mel! Good to see you!"),
        ("Caroline", "I start my new job at Google in Zurich on 3 July."),
        ("Melanie", "Wow, congrats!"),
    ]), max_tokens=60)
    assert "Caroline: I start my new job at Google in Zurich on 3 July." in board.summary
    assert "Good to see you" not in board.summary
    assert COUNTER.count(board.summary) <= 60
    board = update(board, msg(4, "Melanie", "We adopted two cats, Luna and Milo, last week."), max_tokens=60)
    assert "Google in Zurich" in board.summary and "Luna and Milo" in board.summary
    assert COUNTER.count(board.summary) <= 60


def test_key_facts_are_fact_statements_deduplicated_and_capped() -> None:
    board = update(Board.empty(), *conversation(1, [
        ("Caroline", "I work at Acme Corp as a designer. Thanks!"),
        ("Melanie", "Where do you live these days?"),
        ("Caroline", "I live in Denver with my 2 dogs. lol ok"),
        ("Melanie", "We just did it yesterday! [image: a photo of two children on a cliff]"),
        ("Caroline", "I work at Acme Corp as a designer."),
    ]))
    assert board.key_facts == ["Caroline: I live in Denver with my 2 dogs",
                               "Caroline: I work at Acme Corp as a designer"]  # repeat moved to newest
    many = conversation(10, [("Tim", f"I ran {k} miles in Boston on day {k}.") for k in range(40)])
    board = update(board, *many)
    assert len(board.key_facts) == KEY_FACTS_CAP
    assert board.key_facts[-1] == "Tim: I ran 39 miles in Boston on day 39"


def test_key_facts_name_their_person_once_per_group() -> None:
    board = update(Board.empty(), *conversation(1, [
        ("Caroline", "I moved to Lisbon in 2021."), ("Melanie", "I moved to Lisbon in 2021."),
        ("Caroline", "I adopted a dog named Max in May.")]))
    facts = board.section("key_facts")
    # The same words from two people are two facts; the text leaves the person to the group.
    assert [(f.group, f.text) for f in facts] == [("Caroline", "I moved to Lisbon in 2021"),
                                                  ("Melanie", "I moved to Lisbon in 2021"),
                                                  ("Caroline", "I adopted a dog named Max in May")]
    assert [i["text"] for i in board.view_json()["key_facts"]["Caroline"]] == ["I moved to Lisbon in 2021",
                                                                             "I adopted a dog named Max in May"]
    assert board.texts_json()["key_facts"][1] == "Melanie: I moved to Lisbon in 2021"  # said on its own: who
    # Stored, each line says who (what the working context reads), and reads back grouped.
    assert board.to_json()["items"]["key_facts"][0]["text"] == "Caroline: I moved to Lisbon in 2021"
    assert Board.from_json(board.to_json()) == board
    # A board stored before facts were grouped reads as grouped, and is not repeated by a later update.
    old = Board.from_json({"items": {"key_facts": ["Caroline: I moved to Lisbon in 2021.",
                                                   {"text": "Melanie: I moved to Lisbon in 2021",
                                                    "group": "Melanie"}]}, "last_seq": 2})
    assert [(f.group, f.text) for f in old.section("key_facts")] == [
        ("Caroline", "I moved to Lisbon in 2021."), ("Melanie", "I moved to Lisbon in 2021")]
    later = update(old, msg(3, "Melanie", "I moved to Lisbon in 2021."))
    assert later.key_facts == ["Caroline: I moved to Lisbon in 2021.", "Melanie: I moved to Lisbon in 2021"]


def test_entities_are_classified_by_transparent_cues_and_ordered_by_mentions() -> None:
    board = update(Board.empty(), *conversation(1, [
        ("Caroline", "I moved to New York last year. I work at Acme Corp now."),
        ("Melanie", "My friend Jenna studies at the University of Michigan. Dr. Patel said she is great."),
        ("Caroline", "Yesterday I went hiking near Lake Tahoe. My daughter's name is Anna."),
        ("Melanie", "Jenna loves it there, and Jenna says hi. We watched Star Wars."),
    ]))
    assert board.entities["people"][:2] == ["Jenna", "Anna"] or board.entities["people"][0] == "Jenna"
    assert {"Jenna", "Patel", "Anna", "Caroline", "Melanie"} <= set(board.entities["people"])
    assert {"New York", "Lake Tahoe"} <= set(board.entities["places"])
    assert set(board.entities["organizations"]) == {"Acme Corp", "University of Michigan"}
    assert board.entities["other"] == ["Star Wars"]
    assert "Yesterday" not in str(board.entities) and "I" not in board.entity_counts
    assert board.entity_counts["Jenna"] == 3


def test_an_entity_seen_as_other_moves_when_a_cue_appears() -> None:
    board = update(Board.empty(), msg(1, "Tim", "We watched a documentary about Kyoto Gardens and Ravenna."))
    assert "Ravenna" in board.entities["other"]
    board = update(board, msg(2, "Tim", "Next spring we travel to Ravenna for a week."))
    assert "Ravenna" in board.entities["places"] and "Ravenna" not in board.entities["other"]
    assert board.entity_counts["Ravenna"] == 2


def test_topics_count_content_words_and_phrases_over_the_conversation() -> None:
    board = update(Board.empty(), *conversation(1, [
        ("Caroline", "The support group helped me a lot."),
        ("Melanie", "I love that the support group meets weekly."),
        ("Caroline", "My pottery class is on Fridays, and the pottery teacher is kind."),
    ]))
    assert board.topics[:2] == ["support group", "pottery"]
    assert "group" not in board.topics and "the" not in board.topics and "Caroline".lower() not in board.topics
    board = update(board, *conversation(4, [("Melanie", "Pottery again today: my pottery bowl cracked.")] * 1))
    assert board.topics[0] == "pottery" and board.topic_counts["pottery"] == 4


def test_action_items() -> None:
    board = update(Board.empty(), *conversation(1, [
        ("Melanie", "I'll send you the photos tomorrow. I'll never forget that day."),
        ("Caroline", "Remind me to call the vet. Don't forget the concert tickets!"),
        ("Melanie", "Let's meet at 6 at the cafe. Will you come?"),
        ("Caroline", "I need to renew my passport. The weather was nice."),
    ]))
    assert board.action_items == [
        "Melanie: I'll send you the photos tomorrow.", "Caroline: Remind me to call the vet.",
        "Caroline: Don't forget the concert tickets!", "Melanie: Let's meet at 6 at the cafe.",
        "Caroline: I need to renew my passport."]


def test_pending_questions_leave_when_another_speaker_replies() -> None:
    board = update(Board.empty(), *conversation(1, [
        ("Caroline", "Did you finish the painting?"),
        ("Melanie", "Yes, last night! What are you up to this weekend?"),
        ("Melanie", "Also, how is Oscar doing?"),
    ]))
    # Caroline's question was answered by Melanie; Melanie's two questions await Caroline.
    assert board.pending_questions == ["Melanie: What are you up to this weekend?",
                                       "Melanie: Also, how is Oscar doing?"]
    board = update(board, msg(4, "Melanie", "No rush!"))
    assert len(board.pending_questions) == 2  # the asker speaking again answers nothing
    board = update(board, msg(5, "Caroline", "Camping! Oscar is great. Want to join?"))
    assert board.pending_questions == ["Caroline: Want to join?"]


def test_pending_questions_fall_back_to_roles() -> None:
    board = update(Board.empty(), msg(1, None, "Can you summarize the report?", role="user"))
    assert board.pending_questions == ["user: Can you summarize the report?"]
    board = update(board, msg(2, None, "Here is the summary.", role="assistant"))
    assert board.pending_questions == []


def test_constraints_are_kept_across_updates() -> None:
    board = update(Board.empty(), *conversation(1, [
        ("Caroline", "I prefer tea over coffee. Please don't call me after 9 pm."),
        ("Caroline", "Actually, my daughter's name is Anna, not Anne."),
        ("Caroline", "I never eat meat. Do you always cook?"),
        ("Melanie", "The park was sunny today. I'll never forget that trip. It always makes me smile."),
        ("Caroline", "Never call me Caro."),
    ]))
    expected = ["Caroline: I prefer tea over coffee.", "Caroline: Please don't call me after 9 pm.",
                "Caroline: Actually, my daughter's name is Anna, not Anne.", "Caroline: I never eat meat.",
                "Caroline: Never call me Caro."]
    assert board.constraints == expected
    for k in range(30):  # a long stretch of unrelated talk drops none of them
        board = update(board, msg(10 + k, "Melanie", f"We walked {k} km along the river today."))
    assert board.constraints == expected
    board = update(board, *conversation(100, [("Tim", f"I prefer option {k}.") for k in range(CONSTRAINTS_CAP)]))
    assert len(board.constraints) == CONSTRAINTS_CAP and board.constraints[-1] == "Tim: I prefer option 49."


def test_json_round_trip_and_tolerant_reads() -> None:
    board = update(Board.empty(), *conversation(1, [
        ("Caroline", "I moved to New York in 2020. I prefer tea. Will you visit?"),
        ("Melanie", "I'll visit in June!")]))
    data = board.to_json()
    assert set(data) == {"summary", "items", "message_count", "last_seq", "counts"}
    assert set(data["items"]) == {"key_facts", "entities", "topics", "action_items", "pending_questions",
                                  "constraints"}
    assert Board.from_json(data) == board
    assert Board.from_json(None) == Board.empty() == Board.from_json({})
    partial = Board.from_json({"summary": "s", "entities": {"people": ["Ann", None]}, "last_seq": 4,
                               "key_facts": "not a list"})
    assert (partial.summary, partial.entities["people"], partial.last_seq, partial.key_facts) == ("s", ["Ann"], 4, [])
    assert set(partial.entities) == {"people", "places", "organizations", "other"}


def test_board_from_fields_holds_a_proposed_board_to_the_invariants() -> None:
    previous = update(Board.empty(), msg(1, "Caroline", "Please don't call me after 9 pm."))
    proposed = board_from_fields(
        previous, [msg(2, "Melanie", "Jenna and Jenna's dog visited Denver.")],
        summary="  Melanie said Jenna visited Denver.  ", proposed={
            "key_facts": ["Melanie: Jenna visited Denver."] * 3,
            "entities": {"people": ["Jenna"], "places": ["Denver", "Jenna"]}, "topics": ["travel"],
            "action_items": [], "pending_questions": [], "constraints": ["Melanie: I prefer trains."]},
    )
    assert proposed.summary == "Melanie said Jenna visited Denver."
    assert proposed.key_facts == ["Melanie: Jenna visited Denver."]
    assert [(f.group, f.text) for f in proposed.section("key_facts")] == [("Melanie", "Jenna visited Denver.")]
    assert proposed.entities["people"] == ["Jenna"] and proposed.entities["places"] == ["Denver"]
    assert proposed.entity_counts == {"Jenna": 2, "Denver": 1}
    # The proposal forgot the old constraint: it is kept anyway.
    assert proposed.constraints == ["Caroline: Please don't call me after 9 pm.", "Melanie: I prefer trains."]
    assert (proposed.message_count, proposed.last_seq) == (2, 2)


def test_update_board_function_matches_the_summarizer() -> None:
    messages = conversation(1, [("Caroline", "I moved to Lisbon in 2021."), ("Melanie", "Nice! Why Lisbon?")])
    direct = update_board(Board.empty(), messages, max_tokens=100, counter=COUNTER)
    assert direct == SUMMARIZER.update_board(Board.empty(), messages, max_tokens=100)


def test_system_prompts_and_tool_call_arguments_are_not_read_but_are_consumed() -> None:
    board = update(Board.empty(),
                   msg(1, None, "You are a concise assistant for a small bakery.", role="system"),
                   msg(2, "Priya", "Remind me to ask the host about air conditioning."),
                   msg(3, None, '[tool call add_reminder({"due": "2026-03-06", "text": "Ask the Graça host"})]',
                       role="assistant"),
                   msg(4, None, "reminder saved for 2026-03-06", role="tool"))
    assert (board.last_seq, board.message_count) == (4, 4)
    assert "concise" not in board.summary and "add_reminder" not in board.summary
    assert "reminder saved" in board.summary  # a tool's result is read
    assert not any("Ask" in e.text or "due" == e.text for e in (*board.section("entities"), *board.section("topics")))
    assert update(Board.empty(), msg(1, None, "Be brief.", role="system")).last_seq == 1


def test_a_name_joined_by_portuguese_connectors_is_one_entity() -> None:
    board = update(Board.empty(), msg(1, "Priya", "We had a drink at the Miradouro da Senhora do Monte at sunset."))
    assert "Miradouro da Senhora do Monte" in [e.text for e in board.section("entities")]


def _demo_boards() -> dict[str, Board]:
    """The demo conversations folded as the worker folds them: five messages an update, then the
    incomplete tail (`memctx demo` and `memctx summarize` force it)."""
    from pathlib import Path

    from memctx.store.ingest import load_file

    boards = {}
    for conv in load_file(Path(__file__).resolve().parents[2] / "memctx" / "data" / "demo.jsonl", "jsonl"):
        said = [SourceText(UUID(int=i + 1), "message", m.role, m.metadata.get("speaker"), m.text, i + 1, i + 1,
                           m.created_at) for i, m in enumerate(conv.messages)]
        board = Board.empty()
        for start in range(0, len(said), 5):
            board = SUMMARIZER.update_board(board, said[start:start + 5], max_tokens=300)
        boards[conv.external_id] = board
    return boards


def test_the_demo_boards_hold_the_demo_s_facts_and_action_items() -> None:
    boards = _demo_boards()
    trip, bakery = boards["lisbon-trip"], boards["bakery-stock"]
    assert trip.texts("key_facts") == [
        "Priya: I'm planning a week in Lisbon with my partner Tomás in late May",
        "assistant: Sintra is 40 minutes by train from Rossio station",
        "Priya: Actually, we land on 25 May, not 24",  # the 24 May it corrects is gone
        "Priya: Tomás's birthday is on 28 May"]
    assert trip.texts("action_items") == ["Priya: Remind me to ask the host about air conditioning before Friday.",
                                          "assistant: I will look for places in Graça and Alfama under 125 euros a night."]
    entities = {e.text: e.group for e in trip.section("entities")}
    assert entities["Miradouro da Senhora do Monte"] and not {"Ask the Graça", "Monte"} & set(entities)
    assert bakery.last_seq == 7 and "system:" not in bakery.summary
    assert [t.split(": ", 1)[1] for t in bakery.texts("action_items")] == [
        "Order more butter from Laticínios Serra on Wednesday — we need at least 10 kg.",
        "I'll add it to the action list: order 10 kg of butter from Laticínios Serra on Wednesday."]

