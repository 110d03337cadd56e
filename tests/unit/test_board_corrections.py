"""Corrections win: a correction supersedes what it corrects on the board, in every
section, whether it comes in a later update or in the same one; the rest stays."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import pytest

from memctx.summarize.board import board_from_fields, update_board
from memctx.summarize.types import Board, SourceText
from memctx.tokens import get_counter

COUNTER = get_counter()


def msg(seq: int, speaker: str, text: str) -> SourceText:
    return SourceText(UUID(int=seq), "message", "user", speaker, text, seq, seq, datetime(2024, 5, 1),
                      external_id=f"m{seq}")


def lines(board: Board) -> list[str]:
    return board.key_facts + board.action_items + board.constraints


CASES = [
    ("I eat fish but no meat, I'm a pescatarian.", "Actually I'm vegetarian now."),
    ("My budget is 1,500 euros.", "No, the budget is 2,000."),
    ("I prefer window seats.", "Actually, I prefer aisle seats now."),
    ("My sister's name is Anne and she lives in Leeds.", "Sorry, I meant Anna, not Anne."),
    ("Please don't call me before 10 am.", "Sorry, I meant don't call me before 11 am."),
    ("My meeting with Dana is on Friday.", "Correction: my meeting with Dana is on Thursday."),
    ("I'll send you the report on Monday.", "Actually, I'll send you the report on Wednesday."),
    ("I'll land in Lisbon on 24 May at 9:40.", "Actually, we land on 25 May, not 24 — I misread the booking."),
]


@pytest.mark.parametrize("before,after", CASES)
@pytest.mark.parametrize("same_update", [False, True])
def test_a_correction_supersedes_what_it_corrects(before, after, same_update):
    said = [msg(1, "Ana", before), msg(2, "Bo", "Noted."), msg(3, "Ana", "I also have two cats named Tom and Kit.")]
    fix = [msg(4, "Ana", after)]
    if same_update:
        board = update_board(Board.empty(), said + fix, max_tokens=100, counter=COUNTER)
    else:
        board = update_board(Board.empty(), said, max_tokens=100, counter=COUNTER)
        assert any(before.split()[1] in line for line in lines(board)), lines(board)  # it was on the board
        board = update_board(board, fix, max_tokens=100, counter=COUNTER)
    assert f"Ana: {after}" in board.constraints
    assert not any(before in line for line in lines(board)), lines(board)
    assert "Ana: I also have two cats named Tom and Kit" in board.key_facts  # the rest stays
    correction = next(i for i in board.section("constraints") if i.text == f"Ana: {after}")
    assert [s.external_id for s in correction.sources] == ["m4"]


def test_a_correction_leaves_other_people_and_other_subjects_alone():
    board = update_board(Board.empty(), [msg(1, "Ana", "I prefer window seats."), msg(2, "Bo", "I prefer aisle seats."),
                                         msg(3, "Ana", "My budget is 1,500 euros.")], max_tokens=100, counter=COUNTER)
    board = update_board(board, [msg(4, "Bo", "Actually, I prefer window seats now.")], max_tokens=100, counter=COUNTER)
    assert board.constraints == ["Ana: I prefer window seats.", "Bo: Actually, I prefer window seats now."]
    assert board.key_facts == ["Ana: My budget is 1,500 euros"]


def test_a_correction_proposed_by_an_llm_supersedes_the_kept_constraint():
    previous = update_board(Board.empty(), [msg(1, "Ana", "I prefer window seats.")], max_tokens=100, counter=COUNTER)
    board = board_from_fields(previous, [msg(2, "Ana", "Actually, I prefer aisle seats now.")], summary="Seats.",
                              proposed={"constraints": ["Ana: Actually, I prefer aisle seats now."]})
    assert board.constraints == ["Ana: Actually, I prefer aisle seats now."]
    assert [s.external_id for s in board.section("constraints")[0].sources] == ["m2"]
