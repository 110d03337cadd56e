"""The memory section: session headers, verbatim turns, line-by-line sources, the exact budget."""

from datetime import datetime, timedelta, timezone
from uuid import uuid4

import pytest

from memctx.assemble.memories import LINE_TOKENS, fill_memories, more_memories
from memctx.assemble.render import GAP, MEMORY_HEADER
from memctx.retrieve.types import Fragment, Memory, Passage, Provenance
from memctx.tokens import get_counter, message_tokens

COUNTER = get_counter()
CONV = uuid4()
T0 = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def _turn(session: int, seq: int, text: str, who: str = "Caroline", conv=CONV) -> Fragment:
    return Fragment(id=uuid4(), conversation_id=conv, role="user", text=text, seq=seq,
                    time=T0 + timedelta(days=7 * session, seconds=seq), external_id=f"D{session}:{seq}",
                    speaker=who, token_count=COUNTER.count(text), session=session)


def _memory(*fragments: Fragment) -> Memory:
    return Memory(kind="message", id=fragments[0].id, conversation_id=fragments[0].conversation_id,
                  fragments=fragments, score=1.0, similarity=None)


def _summary(text: str) -> Memory:
    fragment = Fragment(id=uuid4(), conversation_id=CONV, role="summary", text=text, seq=None, time=None)
    return Memory(kind="summary", id=fragment.id, conversation_id=CONV, fragments=(fragment,), score=1.0,
                  similarity=None, provenance=Provenance(first_seq=1, last_seq=9))


def _lines(section) -> list[str]:
    return section.message["content"].splitlines()[1:]


def test_one_header_per_session_turns_in_order_best_session_last():
    a1, a2, a5 = _turn(1, 1, "I went to a pottery class."), _turn(1, 2, "Nice!", "Melanie"), _turn(1, 5, "Blue bowl.")
    b3 = _turn(2, 3, "We camped by the lake.", "Melanie")
    section = fill_memories([_memory(b3), _memory(a5), _memory(a1, a2)], set(), 1000, COUNTER)
    assert _lines(section) == ["[15 May 2023]", "Caroline: I went to a pottery class.", "Melanie: Nice!", GAP,
                               "Caroline: Blue bowl.", "[22 May 2023]", "Melanie: We camped by the lake."]
    assert section.message["content"].startswith(MEMORY_HEADER)


def test_sources_name_every_turn_line_in_reading_order():
    hit, partner = _turn(1, 4, "What did you paint?", "Melanie"), _turn(1, 5, "A sunrise over the lake.")
    other = _turn(3, 2, "Running clears my head.", "Melanie")
    summary = _summary("They talked about art.")
    section = fill_memories([_memory(hit, partner), summary, _memory(other)], set(), 1000, COUNTER)
    shown = [line for line in _lines(section) if not (line.startswith("[") and line.endswith("]"))]
    assert len(section.sources) == len(shown)
    by_id = {f.id: f for f in (hit, partner, other)}
    for source, line in zip(section.sources, shown):
        if source.kind == "message":
            fragment = by_id[source.id]
            assert line == f"{fragment.speaker}: {fragment.text}"  # the turn, verbatim
            assert (source.seq, source.external_id, source.section) == (fragment.seq, fragment.external_id,
                                                                         "memories")
        else:
            assert source.id == summary.id and line.endswith("They talked about art.")
    assert [s.detail for s in section.sources] == ["hit", "summary", "hit", "context"]


def test_turns_already_in_the_context_are_not_repeated():
    shown, new = _turn(1, 1, "My dog is a border collie."), _turn(1, 2, "What is his name?", "Melanie")
    section = fill_memories([_memory(shown, new), _memory(shown)], {shown.id}, 1000, COUNTER)
    assert _lines(section) == ["[15 May 2023]", "Melanie: What is his name?"]
    assert [s.id for s in section.sources] == [new.id]


@pytest.mark.parametrize("budget", [20, 40, 60, 90, 150, 300, 700])
def test_never_over_the_budget_and_counted_exactly(budget):
    memories = [_memory(_turn(1 + i % 3, i, f"Turn {i} says something about topic {i % 7}.")) for i in range(40)]
    section = fill_memories(memories, set(), budget, COUNTER)
    if section.message is None:
        assert section.tokens == 0 and section.cuts[0].ids == tuple(str(m.id) for m in memories)
        return
    assert section.tokens == message_tokens(COUNTER, "system", section.message["content"]) <= budget
    kept = {s.id for s in section.sources}
    dropped = set(section.cuts[0].ids) if section.cuts else set()
    assert {str(i) for i in kept} | dropped == {str(m.id) for m in memories} and not {str(i) for i in kept} & dropped
    assert memories[0].id in kept  # the best memory is always kept when anything is


def test_the_header_is_paid_once_so_a_session_fits_more_turns_than_dated_lines():
    turns = [_turn(1, i, f"Line {i} of the same afternoon.") for i in range(1, 21)]
    memories = [_memory(t) for t in turns]
    dated = "\n".join([MEMORY_HEADER, *(f"[15 May 2023] Caroline: {t.text}" for t in turns[:10])])
    budget = message_tokens(COUNTER, "system", dated)  # what ten turns cost with the date on each line
    section = fill_memories(memories, set(), budget, COUNTER)
    assert section.tokens <= budget and len(section.sources) > 12
    assert _lines(section).count("[15 May 2023]") == 1


def test_line_costs_add_up_exactly_so_the_section_fills_to_within_one_turn():
    # Lines ending in punctuation merge with their newline: counted line by line with it, the
    # costs are exact, and nothing is left unspent that the next turn could have used.
    memories = [_memory(_turn(1, 2 * i, f"Sentence number {i} ends here.")) for i in range(60)]
    budget = 300
    section = fill_memories(memories, set(), budget, COUNTER)
    one_turn = message_tokens(COUNTER, "system", "x\n" + f"Caroline: Sentence number 10 ends here.\n{GAP}") - \
        message_tokens(COUNTER, "system", "x")
    assert budget - one_turn < section.tokens <= budget


def test_filling_a_gap_gives_back_its_mark():
    # turns 1 and 3 are shown with a gap mark between them; turn 2 then costs its line (5 tokens), less the mark
    one, three, two = _turn(1, 1, "First."), _turn(1, 3, "Third."), _turn(1, 2, "Second.", "Melanie")
    both = fill_memories([_memory(one), _memory(three)], set(), 1000, COUNTER)
    assert GAP in _lines(both)
    tight = fill_memories([_memory(one), _memory(three), _memory(two)], set(), both.tokens + 4, COUNTER)
    assert _lines(tight) == ["[15 May 2023]", "Caroline: First.", "Melanie: Second.", "Caroline: Third."]
    assert tight.tokens == message_tokens(COUNTER, "system", tight.message["content"])


def _scored(score: float, *fragments: Fragment, hit: int = 0) -> Memory:
    return Memory(kind="message", id=fragments[hit].id, conversation_id=CONV, fragments=fragments, score=score,
                  similarity=None)


def test_a_long_reply_must_earn_the_room_of_the_short_turns_it_would_displace():
    reply = _turn(1, 2, "Here is what I found about trail shoes. " * 40, "assistant")  # ~400 tokens
    short = [_turn(2 + i, 1, f"I ran the {town} half marathon in May." + " It was hot." * 12)
             for i, town in enumerate(("Boston", "Austin", "Denver", "Reno"))]  # ~100 tokens or less each
    assert reply.token_count > 3 * LINE_TOKENS and all(t.token_count <= LINE_TOKENS for t in short)
    memories = [_scored(1.0, reply), *(_scored(0.5, t) for t in short)]
    budget = message_tokens(COUNTER, "system", "\n".join([MEMORY_HEADER, "[15 May 2023]", f"assistant: {reply.text}"])) + 20
    assert sum(t.token_count + 12 for t in short) < budget  # room for the reply, or for the four short turns
    section = fill_memories(memories, set(), budget, COUNTER)
    # twice as relevant, four times as long: the four short turns are worth more than the reply
    assert {s.id for s in section.sources} == {t.id for t in short}
    # four times as relevant and more: the reply is worth its room
    section = fill_memories([_scored(5.0, reply), *(_scored(0.5, t) for t in short)], set(), budget, COUNTER)
    assert reply.id in {s.id for s in section.sources}


def test_a_question_about_what_the_assistant_said_takes_its_reply_by_rank_whatever_its_length():
    text = "Here is what I found about trail shoes. " * 40  # ~400 tokens
    reply = Fragment(id=uuid4(), conversation_id=CONV, role="assistant", text=text, seq=2, time=T0,
                     external_id="D1:2", token_count=COUNTER.count(text), session=1)
    short = [_turn(2 + i, 1, f"I ran the {town} half marathon in May." + " It was hot." * 12)
             for i, town in enumerate(("Boston", "Austin", "Denver", "Reno"))]
    memories = [_scored(1.0, reply), *(_scored(0.5, t) for t in short)]
    budget = message_tokens(COUNTER, "system", "\n".join([MEMORY_HEADER, "[8 May 2023]", f"assistant: {text}"])) + 20
    asked = {s.id for s in fill_memories(memories, set(), budget, COUNTER).sources}
    assert asked == {t.id for t in short}  # per line, the four short turns are worth more
    # "Can you remind me what you said about trail shoes?": the reply is what is asked for
    asked = {s.id for s in fill_memories(memories, set(), budget, COUNTER, replies=True).sources}
    assert reply.id in asked


def test_a_long_partner_turn_comes_with_its_hit_only_when_the_exchange_pays_for_it():
    question = _turn(1, 1, "Which shoes should I buy for wet trails?")
    answer = _turn(1, 2, "For wet trails, look at grip and drainage first. " * 30, "assistant")
    others = [_turn(2 + i, 1, f"My {pet} likes the park by the river.") for i, pet in enumerate(("dog", "cat", "parrot"))]
    memories = [_scored(1.0, question, answer), *(_scored(0.4, t) for t in others)]
    tight = fill_memories(memories, set(), 400, COUNTER)  # room for the answer, or for the three others
    assert {s.id for s in tight.sources} == {question.id, *(t.id for t in others)}  # the short lines first
    roomy = fill_memories(memories, set(), 2000, COUNTER)  # what is left is enough for the answer too
    assert {s.id for s in roomy.sources} == {question.id, answer.id, *(t.id for t in others)}
    long_hit = fill_memories([_scored(1.0, answer, _turn(1, 3, "The Speedgoats, thanks!"))], set(), 120, COUNTER)
    assert [s.detail for s in long_hit.sources] == ["context"]  # a long hit's short partner, alone, fits


def test_a_long_hit_s_partner_comes_alone_when_it_is_the_cheaper_side_even_past_a_line():
    """A long reply matched the query; the user's request before it is a little longer than a line:
    the request alone is offered at its own length, and taken before the reply is."""
    request = _turn(1, 1, "I've written five short stories and eleven poems since I started writing again, and "
                          "I entered three pieces in the writing challenge. " * 4)
    reply = _turn(1, 2, "Congratulations on your writing progress! Here is how to organize your files. " * 30,
                  "assistant")
    assert LINE_TOKENS < request.token_count < 2 * LINE_TOKENS < reply.token_count
    others = [_turn(2 + i, 1, f"My {pet} likes the park by the river.") for i, pet in enumerate(("dog", "cat"))]
    memories = [_scored(1.0, request, reply, hit=1), *(_scored(0.3, t) for t in others)]
    section = fill_memories(memories, set(), 250, COUNTER)  # room for the request and the two others
    assert {s.id for s in section.sources} == {request.id, *(t.id for t in others)}
    assert next(s for s in section.sources if s.id == request.id).detail == "context"


def _long_reply(session: int, seq: int, topic: str, paragraphs: int = 8) -> tuple[Fragment, Fragment]:
    """A long assistant reply with its best passage (the one paragraph about `topic`), and that
    passage shown as an excerpt."""
    body = [f"Paragraph {i} is general advice about planning a trip and packing light for it." for i in range(paragraphs)]
    body[paragraphs // 2] = f"For {topic}, the museum on Kelvin Street opens at nine and is free on Sundays."
    text = "\n".join(body)
    passage = Passage(uuid4(), body[paragraphs // 2], COUNTER.count(body[paragraphs // 2]))
    reply = Fragment(id=uuid4(), conversation_id=CONV, role="assistant", text=text, seq=seq,
                     time=T0 + timedelta(days=7 * session, seconds=seq), external_id=f"D{session}:{seq}",
                     token_count=COUNTER.count(text), session=session, passage=passage)
    return reply, reply.excerpt()


def test_a_long_reply_comes_as_its_cited_excerpt_when_whole_it_does_not_pay():
    question = _turn(1, 1, "Which museum did you suggest for Glasgow?")
    reply, excerpt = _long_reply(1, 2, "Glasgow", paragraphs=30)
    assert reply.token_count > 4 * LINE_TOKENS
    others = [_memory(_turn(2, i, f"Short turn {i} about the weekend plans.")) for i in range(1, 6)]
    hit = Memory(kind="message", id=reply.id, conversation_id=CONV, fragments=(question, reply), score=0.9,
                 similarity=None)
    section = fill_memories([hit, *[Memory(**{**m.__dict__, "score": 0.5}) for m in others]], set(), 160, COUNTER)
    lines = _lines(section)
    excerpt_line = f"assistant (excerpt of a {reply.token_count}-token reply): …{excerpt.text}…"
    assert excerpt_line in lines and reply.text not in section.message["content"]
    assert "Caroline: Which museum did you suggest for Glasgow?" in lines  # the short question stays whole
    cited = next(s for s in section.sources if s.id == reply.id)
    assert (cited.detail, cited.external_id, cited.seq) == ("hit excerpt", "D1:2", 2)
    assert section.tokens <= 160


def test_an_excerpt_becomes_the_whole_reply_when_the_budget_allows():
    question = _turn(1, 1, "Which museum did you suggest for Glasgow?")
    reply, excerpt = _long_reply(1, 2, "Glasgow", paragraphs=6)
    hit = Memory(kind="message", id=reply.id, conversation_id=CONV, fragments=(question, reply), score=0.9,
                 similarity=None)
    section = fill_memories([hit], set(), 2000, COUNTER)
    assert f"assistant: {reply.text}" in section.message["content"]
    assert "excerpt" not in section.message["content"]
    assert [(s.id, s.detail) for s in section.sources] == [(question.id, "context"), (reply.id, "hit")]
    assert section.tokens == message_tokens(COUNTER, "system", section.message["content"])


def test_a_long_turn_without_a_passage_is_never_cut():
    question = _turn(1, 1, "Which museum did you suggest for Glasgow?")
    reply, _ = _long_reply(1, 2, "Glasgow", paragraphs=30)
    plain = Fragment(**{**reply.__dict__, "passage": None})
    hit = Memory(kind="message", id=question.id, conversation_id=CONV, fragments=(question, plain), score=0.9,
                 similarity=None)
    section = fill_memories([hit], set(), 160, COUNTER)
    assert _lines(section) == ["[15 May 2023]", "Caroline: Which museum did you suggest for Glasgow?"]


def test_an_excerpt_stands_where_its_whole_turn_would_and_never_before_a_short_turn_that_outranks_it():
    reply, excerpt = _long_reply(1, 2, "Glasgow", paragraphs=30)  # ~9 lines: worth 0.9 / 9 whole or cut
    hit = Memory(kind="message", id=reply.id, conversation_id=CONV, fragments=(reply,), score=0.9, similarity=None)
    short = _turn(2, 1, "We booked the sleeper train to Inverness for the first night of the trip.")
    other = Memory(kind="message", id=short.id, conversation_id=CONV, fragments=(short,), score=0.2, similarity=None)
    one = fill_memories([hit, other], set(), 60, COUNTER)  # room for one of the two lines
    assert _lines(one) == ["[22 May 2023]", f"Caroline: {short.text}"]
    both = fill_memories([hit, other], set(), 120, COUNTER)
    assert f"assistant (excerpt of a {reply.token_count}-token reply): …{excerpt.text}…" in _lines(both)


def test_more_room_resumes_the_fill_where_it_stopped_keeping_what_it_took():
    big = _memory(_turn(1, 1, "We drove along the coast for a week and slept in a different town every night. " * 6))
    small = [_memory(_turn(2, i, f"Short note number {i} about the trip.")) for i in range(1, 4)]
    memories = [big, *small]
    first = fill_memories(memories, set(), 120, COUNTER, resumable=True)
    assert {s.id for s in first.sources} == {m.id for m in small}  # the long turn left out for room
    assert first.cuts and first.cuts[0].ids == (str(big.id),)
    more = more_memories(first, 400)
    assert {s.id for s in more.sources} == {m.id for m in memories}  # taken now, the rest kept
    assert more.cuts == [] and more.tokens == message_tokens(COUNTER, "system", more.message["content"]) <= 400
    # as a fill from scratch at 400 would: every memory fits
    assert more.message == fill_memories(memories, set(), 400, COUNTER).message
    with pytest.raises(ValueError):
        more_memories(fill_memories(memories, set(), 120, COUNTER), 400)  # not kept resumable


def test_a_context_s_fills_share_their_lines_and_give_the_same_section():
    memories = [_memory(_turn(1, i, f"Line {i} of the first session.")) for i in range(1, 6)]
    lines = {}
    first = fill_memories(memories, set(), 1000, COUNTER, lines=lines)
    assert len(lines) == 5
    again = fill_memories(memories, set(), 1000, COUNTER, lines=lines, report_cuts=False)
    assert again.message == first.message and again.sources == first.sources and again.tokens == first.tokens
