"""get_working_context is worth its tokens, against a real Postgres: a history that fits is sent
verbatim, no context costs more than the history it replaces, and each thing is said once."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memctx.assemble import ContextOptions, assembler_for
from memctx.assemble.context import FREED_TOKENS
from memctx.assemble.render import chat_turn
from memctx.tokens import messages_tokens
from memctx.assemble.repeats import key, repeated_sentences, sentences
from memctx.models import NewMessage
from memctx.pipeline.catchup import catch_up, live_chain
from memctx.store.ingest import ingest, load_file
from support import TRIP

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=timezone.utc)



def _trip(app, user, *, turns=TRIP, name="trip", repeat: int = 1):
    conv = app.store.create_conversation(user, external_id=name)
    msgs = [NewMessage.build(role, text if r == 0 else f"{text} (part {r + 1})", external_id=f"{name}-{r}-{i}",
                             created_at=T0 + timedelta(minutes=2 * (r * len(turns) + i)), metadata={"speaker": who})
            for r in range(repeat) for i, (role, who, text) in enumerate(turns)]
    app.store.append_messages(user, conv.id, msgs)
    return conv


def _history(app, user, conv):
    return [chat_turn(m.role, m.text) for m in app.store.list_messages(user, conv.id)]


@pytest.mark.parametrize("budget", [1000, 4000])
def test_a_history_that_fits_is_the_context_verbatim_in_order(app, budget):
    user = uuid.uuid4()
    conv = _trip(app, user)
    catch_up(app, user, conv.id)  # summaries and a board exist: none of them may be added
    query = "Which restaurants should we book for dinner?"
    wc = assembler_for(app).get_working_context(user, conv.id, query, budget)
    history = _history(app, user, conv)
    assert wc.messages == [{"role": "system", "content": app.settings.context_system_prompt}, *history,
                           {"role": "user", "content": query}]
    assert wc.tokens == messages_tokens(app.counter, wc.messages)
    assert [s.seq for s in wc.sources] == list(range(1, len(TRIP) + 1))
    assert repeated_sentences(wc.messages) == 0


def test_past_compress_at_the_history_is_compressed(app):
    user = uuid.uuid4()
    conv = _trip(app, user)
    history = _history(app, user, conv)
    query = "Which restaurants should we book for dinner?"
    full = messages_tokens(app.counter, [{"role": "system", "content": app.settings.context_system_prompt},
                                         *history, {"role": "user", "content": query}])
    assembler = assembler_for(app)
    # A history over the budget is compressed: recent turns verbatim, summaries for the older part.
    wc = assembler.get_working_context(user, conv.id, query, full - 40)
    assert wc.messages[1:-1] != history and wc.tokens <= full - 40
    assert history[-1]["content"] in wc.text
    # Between 80 % and all of the budget, the assembled context would cost more than the
    # history: the history is sent as it is instead.
    between = assembler.get_working_context(user, conv.id, query, int(full / 0.8) - 10)
    assert between.messages[1:-1] == history and between.tokens == full
    # With compress_at 0.5 a budget of twice the history compresses, and still costs no more.
    halved = assembler.get_working_context(user, conv.id, query, 2 * full + 10,
                                           options=replace(assembler.options, compress_at=0.5))
    assert halved.messages[1:-1] == history and halved.tokens == full


@pytest.mark.parametrize("budget", [300, 500, 700, 1000, 2000, 4000])
@pytest.mark.parametrize("scope", ["conversation", "user"])
def test_never_more_than_the_history_with_system_prompt_and_query(app, budget, scope):
    user = uuid.uuid4()
    conv = _trip(app, user, repeat=3)
    catch_up(app, user, conv.id)
    assembler = assembler_for(app)
    query = "When is Tomás's birthday dinner?"
    wc = assembler.get_working_context(user, conv.id, query, budget, options=replace(assembler.options, scope=scope))
    full = messages_tokens(app.counter, [wc.messages[0], *_history(app, user, conv), wc.messages[-1]])
    assert wc.tokens <= min(budget, full)


def test_the_setting_reaches_the_assembler(settings):
    assert ContextOptions.from_settings(settings).compress_at == settings.compress_at == 0.8
    assert ContextOptions.from_settings(settings.model_copy(update={"compress_at": 0.5})).compress_at == 0.5


@pytest.mark.parametrize("budget", [250, 400, 1000, 4000])
def test_each_thing_is_said_once(app, budget):
    user = uuid.uuid4()
    conv = _trip(app, user, repeat=4)
    catch_up(app, user, conv.id)
    for query in ("Which restaurants should we book for dinner?", "When do we land and what is the budget?"):
        wc = assembler_for(app).get_working_context(user, conv.id, query, budget)
        assert repeated_sentences(wc.messages) == 0, wc.text


@pytest.mark.parametrize("budget", [400, 700, 1000])
def test_what_saying_each_thing_once_frees_goes_to_the_memories(app, budget):
    """The current context leaves out what the memories say after they are chosen: the tokens it
    frees are the memories' too, not left unused."""
    user = uuid.uuid4()
    conv = _trip(app, user, repeat=4)
    catch_up(app, user, conv.id)
    wc = assembler_for(app).get_working_context(user, conv.id, "When do we land and what is the budget?", budget)
    sections = {s.name: s for s in wc.sections}
    fixed = sections["system"].tokens + sections["query"].tokens
    taken = sections["profile"].tokens + sections["current"].tokens  # the profile's room is its own
    assert sections["memories"].budget + taken > budget - fixed - FREED_TOKENS, wc.sections
    assert wc.tokens <= budget and repeated_sentences(wc.messages) == 0


DEMO = Path(__file__).resolve().parents[2] / "memctx" / "data" / "demo.jsonl"


def _stale(wc, old: str) -> list[str]:
    """Lines of the context's system messages (memories, summaries, board) that state `old` as
    current: without a "(replaced … by: …)" mark."""
    return [line for m in wc.messages[1:-1] if m["role"] == "system" for line in m["content"].splitlines()
            if old in line and "(replaced" not in line]


@pytest.mark.parametrize("budget", [350, 500, 700])
def test_a_correction_supersedes_in_the_demo(app, budget):
    user = uuid.uuid4()
    conv = next(r for r in ingest(app.store, load_file(DEMO, "jsonl"), user) if r.external_id == "lisbon-trip")
    catch_up(app, user, conv.conversation_id)
    wc = assembler_for(app).get_working_context(user, conv.conversation_id, "When do we land in Lisbon?", budget)
    assert "land on 25 May" in wc.text or "arrival 25 May" in wc.text
    assert _stale(wc, "24 May") == [], wc.text
    assert repeated_sentences(wc.messages) == 0, wc.text
    marked = [line for line in wc.text.splitlines() if "(replaced on 2 March 2026 by: Actually, we land on 25 May" in line]
    assert all(line.startswith("Priya: We land on 24 May") for line in marked)


@pytest.mark.parametrize("budget", [250, 400])
def test_a_correction_supersedes_in_the_trip(app, budget):
    user = uuid.uuid4()
    conv = _trip(app, user)
    catch_up(app, user, conv.id)
    for query in ("What is our budget for the trip?", "When do we land?"):
        wc = assembler_for(app).get_working_context(user, conv.id, query, budget)
        assert _stale(wc, "1,500 euros") == [] and _stale(wc, "land on 24 May") == [], wc.text
        assert repeated_sentences(wc.messages) == 0


def test_a_summary_of_27_turns_carries_more_than_one_sentence(app):
    user = uuid.uuid4()
    conv = _trip(app, user, repeat=2)  # 32 turns: a level-3 summary of turns 1-27
    catch_up(app, user, conv.id)
    level3 = next(i for i in live_chain(app, user, conv.id) if i.kind == "summary" and i.level == 3)
    assert (level3.first_seq, level3.last_seq) == (1, 27)
    covered = sum(m.token_count for m in app.store.list_messages(user, conv.id) if m.seq <= 27)
    said = [s for s in sentences(level3.text) if key(s)]
    # half of what it covers is its room: it keeps what the turns said, not one line of it
    assert level3.token_count <= covered // 2 and len(said) >= 5, level3.text
    assert any("Pena Palace" in s for s in said) and any("shellfish" in s for s in said), level3.text
