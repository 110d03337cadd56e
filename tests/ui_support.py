"""A conversation for the summary-board page's tests: two people planning a trip, with facts,
a reminder, a question and a preference, so the board has something in each section.
`store_turns(app, user, conversation_id, start, count)` appends turns `start..start+count-1`
(external ids `t0`, `t1`, …; the texts cycle) as the user would through the API."""

from __future__ import annotations

from uuid import UUID

from memctx.app import App
from memctx.models import NewMessage

TURNS = [
    ("user", "Ana", "Hi, I'm Ana. I'm planning a trip to Lisbon with my brother Tomas in May."),
    ("assistant", None, "Lovely! How many days will you stay in Lisbon?"),
    ("user", "Ana", "Five days. Tomas is vegetarian, so please keep that in mind for restaurants."),
    ("assistant", None, "Noted: vegetarian restaurants. Do you prefer Alfama or Baixa for the hotel?"),
    ("user", "Ana", "Alfama, near the castle. I prefer quiet places, no loud bars."),
    ("assistant", None, "The Memmo Alfama is quiet and has a terrace over the river."),
    ("user", "Ana", "Remind me to book the tram 28 tickets before Friday."),
    ("assistant", None, "I will remind you to book the tram 28 tickets before Friday."),
    ("user", "Ana", "Tomas wants to visit the Gulbenkian museum on Tuesday."),
    ("assistant", None, "The Gulbenkian opens at 10 and is closed on Tuesdays, so Wednesday is better."),
]


def store_turns(app: App, user: UUID, conversation_id: UUID, start: int, count: int) -> None:
    messages = [NewMessage.build(role, text, external_id=f"t{i}",
                                 metadata={"speaker": speaker} if speaker else None)
                for i in range(start, start + count)
                for role, speaker, text in [TURNS[i % len(TURNS)]]]
    app.store.append_messages(user, conversation_id, messages)
