"""get_working_context against a real Postgres: budget, order, sources, summaries, status quo."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest
from psycopg.types.json import Jsonb

from memctx.assemble import BudgetTooSmall, ContextOptions, assembler_for, get_working_context
from memctx.models import NewMessage
from memctx.store import UnknownConversation
from memctx.tokens import messages_tokens

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
TOPICS = ["pottery class and a blue bowl", "my dog Rex, a border collie", "a hiking trip to the Dolomites",
          "the quarterly budget review", "learning Portuguese verbs", "a jazz concert downtown",
          "fixing the bike's rear brake", "baking sourdough bread", "moving to a new flat in Porto",
          "my sister Clara's wedding"]


def _conversation(app, user, turns: int = 40):
    conv = app.store.create_conversation(user, external_id="conv")
    msgs = []
    for i in range(turns):
        topic = TOPICS[i % len(TOPICS)]
        role, who = ("user", "Ana") if i % 2 == 0 else ("assistant", "Ben")
        text = f"Talking about {topic}, turn {i}: " + ("it went well and I want to tell you more. " * (1 + i % 3))
        msgs.append(NewMessage.build(role, text, external_id=f"D{1 + i // 10}:{1 + i % 10}",
                                     created_at=T0 + timedelta(days=i // 10, seconds=10 * i),
                                     metadata={"speaker": who, "session": 1 + i // 10}))
    app.store.append_messages(user, conv.id, msgs)
    return conv


@pytest.mark.parametrize("budget", [120, 400, 1000, 3000])
def test_never_over_budget_and_query_last_system_first(app, budget):
    user = uuid.uuid4()
    conv = _conversation(app, user)
    query = "What breed is Rex?"
    wc = get_working_context(app, conv.id, query, budget, user=user)
    assert wc.tokens == messages_tokens(app.counter, wc.messages) <= budget
    # a compressed context says what day it is asked on, after the prompt (3000 holds the history)
    said = "" if wc.today is None else f"\nToday is {wc.today:%A}, {wc.today.day} {wc.today:%B %Y}."
    assert wc.today in (None, datetime.now(timezone.utc).date()) and (wc.today is None) == (budget == 3000)
    assert wc.messages[0] == {"role": "system", "content": app.settings.context_system_prompt + said}
    assert wc.messages[-1] == {"role": "user", "content": query}
    assert sum(s.tokens for s in wc.sections) + 3 == wc.tokens  # every token is accounted to a section


def test_memories_are_relevant_ordered_and_sourced(app):
    user = uuid.uuid4()
    conv = _conversation(app, user)
    wc = get_working_context(app, conv.id, "Tell me about the border collie Rex", 800, user=user)
    memory_msg = next(m for m in wc.messages if m["content"].startswith("Relevant memories"))
    assert "border collie" in memory_msg["content"]
    # the most relevant memory sits last in the section, nearest the query
    last_block_line = [line for line in memory_msg["content"].splitlines() if line.startswith("[")][-1]
    assert "collie" in memory_msg["content"].split(last_block_line)[1] or "collie" in last_block_line
    memory_sources = [s for s in wc.sources if s.section == "memories"]
    assert memory_sources and all(s.kind == "message" and s.external_id and s.seq for s in memory_sources)
    by_id = {str(m.id): m for m in app.store.list_messages(user, conv.id)}
    for source in memory_sources:
        assert by_id[str(source.id)].text in memory_msg["content"]  # raw turns are verbatim
    recent = [s for s in wc.sources if s.section == "current" and s.kind == "message"]
    assert recent and recent[-1].seq == 40  # the newest turn is in the current context


def test_memory_turns_sit_under_one_header_per_session_and_sources_follow_the_lines(app):
    user = uuid.uuid4()
    conv = _conversation(app, user, turns=120)  # longer than the budget: compressed
    wc = get_working_context(app, conv.id, "How did the pottery class and the hiking trip go?", 3000, user=user)
    memory_msg = next(m for m in wc.messages if m["content"].startswith("Relevant memories"))
    lines = memory_msg["content"].splitlines()[1:]
    headers = [line for line in lines if line.startswith("[") and line.endswith("]")]
    assert len(headers) > 1 and len(headers) == len(set(headers))  # each session's date once
    assert not any(line.startswith("[") and not line.endswith("]") for line in lines)  # no date on a turn
    by_id = {m.id: m for m in app.store.list_messages(user, conv.id)}
    turns = [line for line in lines if line not in headers and line != "…"]
    sources = [s for s in wc.sources if s.section == "memories"]
    assert [f"{by_id[s.id].speaker}: {by_id[s.id].text}" for s in sources] == turns  # verbatim, in reading order
    for header, following in zip(headers, [lines[lines.index(h) + 1] for h in headers]):
        source = sources[turns.index(following)]
        assert header == f"[{by_id[source.id].created_at.day} May 2023]"


def test_works_without_summaries_and_uses_them_when_they_exist(app):
    user = uuid.uuid4()
    conv = _conversation(app, user, turns=120)  # longer than the budget: compressed
    bare = get_working_context(app, conv.id, "How was the jazz concert?", 2000, user=user)
    assert not [s for s in bare.sources if s.kind in ("summary", "board") and s.detail != "compressed"]
    messages = app.store.list_messages(user, conv.id)
    with app.pool.connection() as conn:
        conn.execute("insert into memctx.summaries (conversation_id, user_id, level, is_master, content, source_kind,"
                     " source_ids, first_seq, last_seq, token_count) values (%s, %s, 2, true, %s, 'message', %s, 1, 30, 12)",
                     (conv.id, user, "MASTER: Ana and Ben talked about hobbies, pets and travel.",
                      [m.id for m in messages[:30]]))
        conn.execute("insert into memctx.summaries (conversation_id, user_id, level, content, source_kind, source_ids,"
                     " first_seq, last_seq, token_count, superseded_at) values (%s, %s, 1, %s, 'message', %s, 1, 5, 5, now())",
                     (conv.id, user, "OLD superseded summary", [messages[0].id]))
        conn.execute("insert into memctx.summary_boards (conversation_id, user_id, current_summary, items,"
                     " last_seq) values (%s, %s, %s, %s, 40)",
                     (conv.id, user, "Board: a chat about hobbies.",
                      '{"key_facts": [{"text": "Rex is a border collie", "sources": []}],'
                      ' "constraints": [{"text": "Ana is vegetarian", "sources": []}]}'))
    wc = get_working_context(app, conv.id, "How was the jazz concert?", 2000, user=user)
    text = wc.text
    assert "MASTER: Ana and Ben" in text and "Rex is a border collie" in text and "Ana is vegetarian" in text
    assert "OLD superseded" not in text
    master = next(s for s in wc.sources if s.kind == "summary" and s.detail == "master")
    assert (master.first_seq, master.last_seq) == (1, 30)
    assert any(s.kind == "board" for s in wc.sources)


def _summaries_and_board(app, user, conv, messages):
    """A level-2 summary of ~165 tokens, a board summary of ~210 and key facts of ~115, as in the
    report of a 2,000-token context that used 247 tokens and dropped all three."""
    summary = "SUMMARY: " + "".join(f"Ana and Ben planned pottery class {i}, the hike and the budget review. "
                                    for i in range(11))
    board = "BOARD: " + "".join(f"A long chat number {i} about hobbies, pets, travel plans and family news. "
                                for i in range(14))
    facts = [f"FACT {i}: Rex the border collie learned trick number {i}." for i in range(8)]
    with app.pool.connection() as conn:
        conn.execute("insert into memctx.summaries (conversation_id, user_id, level, content, source_kind,"
                     " source_ids, first_seq, last_seq, token_count) values (%s, %s, 2, %s, 'message', %s, 1, 30, %s)",
                     (conv.id, user, summary, [m.id for m in messages[:30]], app.counter.count(summary)))
        conn.execute("insert into memctx.summary_boards (conversation_id, user_id, current_summary, items,"
                     " last_seq) values (%s, %s, %s, %s, 40)",
                     (conv.id, user, board, Jsonb({"key_facts": [{"text": f, "sources": []} for f in facts]})))
    return summary, board, facts


def test_shares_are_targets_what_memories_leave_goes_to_the_current_context(app):
    user = uuid.uuid4()
    conv = _conversation(app, user, turns=120)  # longer than the budget: compressed
    summary, board, facts = _summaries_and_board(app, user, conv, app.store.list_messages(user, conv.id))
    wc = get_working_context(app, conv.id, "zqxv wpmb krtl?", 2000, user=user)
    memories = next(s for s in wc.sections if s.name == "memories")
    assert memories.tokens < 600, "the query matches next to nothing, so memories leave most of their share"
    assert summary in wc.text and board in wc.text and all(f in wc.text for f in facts)
    assert not [c for c in wc.cuts if c.section == "current" and c.action == "dropped"]
    assert wc.tokens <= 2000
    current = next(s for s in wc.sections if s.name == "current")
    assert current.tokens <= current.budget and sum(s.budget for s in wc.sections) <= 2000


def test_tight_current_share_compresses_then_drops_and_reports(app):
    user = uuid.uuid4()
    conv = _conversation(app, user)
    assembler = assembler_for(app)
    opts = ContextOptions(current_share=0.2, recent_turns=12)
    wc = assembler.get_working_context(user, conv.id, "What about Porto?", 900, options=opts)
    assert wc.tokens <= 900
    current = next(s for s in wc.sections if s.name == "current")
    assert current.tokens <= current.budget
    assert wc.compressed, "passing 80 % of the share summarizes the older half of the raw turns"
    assert len(wc.compressed[0].ids) == 6


def test_status_quo_flag_returns_last_messages(app):
    user = uuid.uuid4()
    conv = _conversation(app, user)
    wc = get_working_context(app, conv.id, "Anything new?", 600, user=user, status_quo=True)
    assert wc.mode == "status_quo" and wc.tokens <= 600
    seqs = [s.seq for s in wc.sources]
    assert seqs == sorted(seqs) and seqs[-1] == 40
    assert all(s.kind == "message" for s in wc.sources)
    assert wc.messages[-1]["content"] == "Anything new?"


def test_budget_too_small_for_system_and_query_is_an_error(app):
    user = uuid.uuid4()
    conv = _conversation(app, user, turns=4)
    with pytest.raises(BudgetTooSmall):
        get_working_context(app, conv.id, "a long question " * 20, 30, user=user)


def test_other_users_conversation_is_unknown(app):
    owner = uuid.uuid4()
    conv = _conversation(app, owner, turns=4)
    with pytest.raises(UnknownConversation):
        get_working_context(app, conv.id, "hello", 500, user=uuid.uuid4())
