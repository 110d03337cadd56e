"""What a board sentence is: a key fact, an action item, a constraint, a correction, a question.

Owns: the key-free detectors the board rules (`memctx.summarize.board`) and the board measure
(`memctx.evaluate.board`) share. Each takes one sentence and answers yes or no. Pure; no model,
no I/O.
"""

from __future__ import annotations

import re

from memctx.summarize import text as cues_of
from memctx.summarize.text import cues

_IMAGE_ONLY = re.compile(r"^\[image: [^\]]*\]$")


def is_key_fact(sentence: str) -> bool:
    c = cues(sentence)
    if c.question or c.small_talk or c.size < 4 or _IMAGE_ONLY.match(sentence):
        return False
    return c.fact or bool(c.names) or c.number or c.absolute_date


def is_action(sentence: str) -> bool:
    return cues(sentence).action


def is_constraint(sentence: str) -> bool:
    return not cues(sentence).question and cues(sentence).constraint


def is_correction(sentence: str) -> bool:
    return not cues(sentence).question and cues_of.is_correction(sentence.replace("’", "'"))


def is_question(sentence: str) -> bool:
    return cues(sentence).question
