"""The profile prompt, as code: one function returning the messages, its response model beside it.

Owns: the wording of the learning prompt and the pydantic models its JSON reply must validate
against. It must not call a model. The model reads the new messages (numbered by their seq, each
with its speaker and date) and the profile as it stands, and lists what the messages say about the
people who wrote them, each item citing the one message it comes from.
"""

from __future__ import annotations

from typing import Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memctx.learn.topics import TOPIC_WORDS
from memctx.learn.types import ProfileItem, Said
from memctx.summarize.text import format_day

Messages = list[dict[str, str]]
MAX_VALUE = 300

_SYSTEM = (
    "You keep the profile an assistant has of its users: facts about them and the people around them, "
    "their preferences and standing instructions, and their plans. You only write down what a person "
    "said about themselves. You reply with one JSON object and nothing else."
)

_RULES = f"""Rules:
- One item per thing learned, each from exactly one message: give that message's number as "source".
- "person": who said it, as the message names them ("user" when it has no name). Never learn \
anything from an assistant's message without a name.
- "kind": "fact" (who they are, family, home, work, pets, possessions, what they did), "preference" \
(tastes, diet, allergies, tools, dislikes), "instruction" (how they want the assistant to answer, \
meant to last: "keep answers short", "reply in Spanish") or "plan" (plans and goals).
- "subject": "self", or the relation it is about ("sister", "dog", "boss").
- "topic": one of {", ".join(TOPIC_WORDS)}, or "general".
- "value": what they said, in plain words, short, in their own words where possible.
- "slot": when the item holds one value at a time (home, job, age, diet, name, relationship), that \
slot's name; else "".
- "explicit": true when said outright; false when you infer it from how they behave.
- "correction": true when the message corrects or updates something said before (it then replaces it).
- Leave out greetings, thanks, questions, small talk and anything about the assistant itself.
- An empty list is a fine answer."""


class LearnedItem(BaseModel):
    """One item of the reply to `profile_prompt`."""

    model_config = ConfigDict(extra="ignore")

    source: int
    person: str = Field(min_length=1, max_length=200)
    kind: Literal["fact", "preference", "instruction", "plan"]
    subject: str = Field(default="self", min_length=1, max_length=200)
    topic: str = Field(default="general", min_length=1, max_length=100)
    value: str = Field(min_length=1, max_length=MAX_VALUE)
    slot: str = Field(default="", max_length=100)
    explicit: bool = True
    correction: bool = False

    @field_validator("person", "subject", "topic", "value", "slot")
    @classmethod
    def _stripped(cls, value: str) -> str:
        return value.strip()

    @field_validator("value")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value:
            raise ValueError("value is blank")
        return value


class ProfileResponse(BaseModel):
    """The reply to `profile_prompt`."""

    model_config = ConfigDict(extra="ignore")

    items: list[LearnedItem] = Field(default_factory=list)


def profile_prompt(messages: Sequence[Said], known: Sequence[ProfileItem], *, known_limit: int = 60) -> Messages:
    """What the new messages say about the people who wrote them, given the profile so far."""
    lines = []
    for m in messages:
        who = m.speaker or m.role
        lines.append(f"[#{m.seq} · {format_day(m.created_at.date())}] {who}: {m.text}")
    profile = "\n".join(f"- {i.person}: {i.value} ({i.kind}, {i.topic})" for i in list(known)[:known_limit]) or "(empty)"
    user = (
        "List what these new messages say about the people who wrote them.\n\n"
        f"{_RULES}\n\n"
        'Reply with a JSON object of the form {"items": [{"source": 12, "person": "user", "kind": "fact", '
        '"subject": "self", "topic": "home", "value": "moved to Lisbon", "slot": "home", "explicit": true, '
        '"correction": false}]}.\n\n'
        f"Profile so far:\n{profile}\n\nNew messages:\n" + "\n".join(lines)
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]
