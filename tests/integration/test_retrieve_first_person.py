"""Memory search embeds a question about a named speaker in the first person (real Postgres, real embedder)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from memctx.models import NewMessage
from memctx.retrieve import MemorySearch, SearchOptions

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
CHAT = [
    ("user", "Hey Melanie! How was your weekend? Did the kids like the museum?", "Caroline"),
    ("assistant", "I took my kids camping by the lake and we roasted marshmallows.", "Melanie"),
    ("user", "That sounds like fun. I spent mine at a support group.", "Caroline"),
    ("assistant", "I also finished a pottery bowl in my class on Saturday.", "Melanie"),
]


def test_the_dense_list_embeds_a_named_speaker_in_the_first_person(app):
    user = uuid.uuid4()
    conv = app.store.create_conversation(user, external_id="first-person")
    app.store.append_messages(user, conv.id, [
        NewMessage.build(role, text, external_id=f"D1:{i + 1}", created_at=T0 + timedelta(minutes=i),
                         metadata={"speaker": who, "session": 1}) for i, (role, text, who) in enumerate(CHAT)])
    query = "What does Melanie do with Melanie's kids?"
    search = MemorySearch(app.pool, app.embedder, SearchOptions(threshold=-1.0, pair=False))
    memories = {m.fragments[0].text: m for m in search.search(user, query, conv.id, limit=10)}
    assert set(memories) == {text for _, text, _ in CHAT}
    turns = app.embedder.embed([text for _, text, _ in CHAT])
    asked, raw = (search.embed_query(q) for q in ("What does I do with my kids?", query))
    for (_, text, _), vec in zip(CHAT, turns):
        assert memories[text].similarity == pytest.approx(float(np.dot(vec, asked)), abs=1e-3)
    # what the user notices: with the name, the turn addressed to Melanie comes nearest; in the
    # first person, the turn Melanie said about her kids does
    assert float(np.dot(turns[0], raw)) > float(np.dot(turns[1], raw))
    assert float(np.dot(turns[1], asked)) > float(np.dot(turns[0], asked))
