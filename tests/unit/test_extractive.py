"""The extractive summarizer: what it keeps, what it drops, its budget, its edge cases, its speed."""

from __future__ import annotations

import random
import re
import time
from datetime import datetime, timedelta
from typing import Hashable
from uuid import UUID, uuid4

from hypothesis import given, settings
from hypothesis import strategies as st

from memctx.models import Message, Summary
from memctx.summarize.chain import ChainElement, ChainParams, apply_action, plan_next
from memctx.summarize.extractive import ExtractiveSummarizer
from memctx.summarize.text import split_long
from memctx.summarize.types import SourceText
from memctx.tokens import get_counter
from memctx.words import split_sentences

COUNTER = get_counter()
SUMMARIZER = ExtractiveSummarizer(COUNTER)
MAY_8 = datetime(2023, 5, 8, 13, 56)
MAY_25 = datetime(2023, 5, 25, 10, 0)


def msg(seq: int, speaker: str | None, text: str, when: datetime | None = None,
        role: str | None = "user") -> SourceText:
    return SourceText(UUID(int=seq), "message", role, speaker, text, seq, seq, when, 0)


def summary_source(first: int, last: int, text: str, level: int = 1) -> SourceText:
    return SourceText(UUID(int=10_000 + first), "summary", None, None, text, first, last, None, level)


def summarize(sources, max_tokens: int = 200, **kw) -> str:
    draft = SUMMARIZER.summarize(sources, level=kw.pop("level", 1), is_master=kw.pop("is_master", False),
                                 max_tokens=max_tokens, **kw)
    assert draft.token_count == COUNTER.count(draft.content) <= max_tokens
    assert draft.summarizer == "extractive" and not draft.fallback
    return draft.content


def test_fact_bearing_sentence_beats_small_talk() -> None:
    sources = [msg(1, "Melanie", "Thanks!"), msg(2, "Caroline", "lol ok"),
               msg(3, "Caroline", "I moved to Boston in 2019 with my 2 dogs."), msg(4, "Melanie", "Haha, yeah!")]
    out = summarize(sources, max_tokens=20)
    assert out == "Caroline: I moved to Boston in 2019 with my 2 dogs."


def test_small_talk_is_left_out_even_when_it_would_fit() -> None:
    sources = [msg(1, "Melanie", "Hey Caroline! Good to see you! How have you been?"),
               msg(2, "Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
               msg(3, "Melanie", "Wow, that's cool!")]
    out = summarize(sources)
    assert out == "Caroline: I went to a LGBTQ support group yesterday and it was so powerful."


def test_speaker_attribution_and_original_order() -> None:
    sources = [msg(1, "Caroline", "My counseling course starts on 3 June at Boston University."),
               msg(2, "Melanie", "I painted a sunrise over Lake Tahoe last weekend."),
               msg(3, "Caroline", "My mentor Dr. Patel recommended the course to me.")]
    out = summarize(sources).splitlines()
    assert out == ["Caroline: My counseling course starts on 3 June at Boston University.",
                   "Melanie: I painted a sunrise over Lake Tahoe last weekend.",
                   "Caroline: My mentor Dr. Patel recommended the course to me."]


def test_date_header_single_day_and_span_with_day_markers() -> None:
    one_day = summarize([msg(1, "Caroline", "I adopted a puppy named Oscar.", MAY_8)])
    assert one_day == "[8 May 2023]\nCaroline: I adopted a puppy named Oscar."
    two_days = summarize([msg(1, "Caroline", "I adopted a puppy named Oscar.", MAY_8),
                          msg(2, "Melanie", "We went camping at Yosemite with the kids.", MAY_25)])
    assert two_days.splitlines() == [
        "[8 May 2023 – 25 May 2023]", "[8 May 2023]", "Caroline: I adopted a puppy named Oscar.",
        "[25 May 2023]", "Melanie: We went camping at Yosemite with the kids."]


def test_summaries_of_summaries_keep_sentences_speakers_and_dates() -> None:
    first = "[8 May 2023]\nCaroline: I adopted a puppy named Oscar. He is 3 months old.\nMelanie: Thanks!"
    second = "[25 May 2023]\nMelanie: We went camping at Yosemite with the kids."
    out = summarize([summary_source(1, 3, first), summary_source(4, 6, second)], level=2)
    assert out.splitlines() == [
        "[8 May 2023 – 25 May 2023]", "[8 May 2023]",
        "Caroline: I adopted a puppy named Oscar. He is 3 months old.",
        "[25 May 2023]", "Melanie: We went camping at Yosemite with the kids."]
    # A level-3 summary of that level-2 text reads its day markers back.
    newer = summary_source(7, 9, "[2 June 2023]\nCaroline: I start my new job at Google on Monday.", level=2)
    again = summarize([summary_source(1, 6, out, level=2), newer], level=3)
    assert again.startswith("[8 May 2023 – 2 June 2023]\n")
    assert "[25 May 2023]\nMelanie: We went camping at Yosemite with the kids." in again


def test_each_source_contributes_when_the_budget_allows() -> None:
    sports = " ".join(f"The Lakers beat the Celtics {100 + i} to {90 + i} in game {i}." for i in range(8))
    sources = [msg(1, "Tim", sports), msg(2, "John", "My sister Emma moved to Denver for her nursing job."),
               msg(3, "Tim", "I booked flights to Tokyo for 14 October.")]
    out = summarize(sources, max_tokens=90)
    assert "John: My sister Emma moved to Denver" in out and "Tokyo" in out and "Lakers" in out


def test_correction_and_preference_survive_a_tight_budget() -> None:
    chatter = [msg(i, "Melanie" if i % 2 else "Caroline", text) for i, text in enumerate([
        "The weather was nice and sunny and the garden looked lovely this morning.",
        "The garden has lots of flowers and the weather was warm and sunny again.",
        "Actually, my daughter's name is Anna, not Anne.",
        "Sunny weather makes the garden and the flowers look lovely.",
        "Please don't call me before 9 am.",
        "The flowers in the garden loved the sunny weather this week.",
    ], start=1)]
    out = summarize(chatter, max_tokens=64)  # room for both and one line of chatter
    assert "Actually, my daughter's name is Anna, not Anne." in out
    assert "Please don't call me before 9 am." in out
    assert out.index("Actually") < out.index("Please")  # still in the original order


def test_master_update_reads_the_previous_master() -> None:
    previous = "[8 May 2023]\nCaroline: I adopted a puppy named Oscar."
    newer = summary_source(82, 108, "[25 May 2023]\nMelanie: We went camping at Yosemite with the kids.", level=3)
    out = summarize([newer], level=4, is_master=True, previous=previous)
    assert out.splitlines()[0] == "[8 May 2023 – 25 May 2023]"
    assert "Oscar" in out and "Yosemite" in out
    # The master passed both as a source and as `previous` is read once.
    master = summary_source(1, 81, previous, level=4)
    assert summarize([master, newer], level=4, is_master=True, previous=previous) == out


def test_empty_inputs_give_an_empty_summary() -> None:
    assert summarize([]) == ""
    assert summarize([msg(1, "Caroline", ""), msg(2, "Melanie", "   \n ")]) == ""
    assert summarize([msg(1, "Caroline", "I adopted a puppy named Oscar.")], max_tokens=0) == ""


def test_one_source() -> None:
    assert summarize([msg(1, "Caroline", "Yes.")]) == "Caroline: Yes."
    assert summarize([msg(1, None, "No speaker or role here.", role=None)]) == "No speaker or role here."
    by_role = summarize([msg(1, None, "I need the report by Friday.", role="user")])
    assert by_role == "user: I need the report by Friday."


def test_very_long_single_message_is_summarized_not_truncated() -> None:
    rng = random.Random(3)
    filler = ["The meeting ran long and everyone was tired by the end of it.",
              "We talked about the weather and the traffic for a while.",
              "Nothing much happened during the rest of the afternoon."]
    sentences = [rng.choice(filler) for _ in range(300)]
    sentences[217] = "Caroline signed the lease for a flat in Lisbon for 1,450 euros a month on 3 July."
    out = summarize([msg(1, "Caroline", " ".join(sentences))], max_tokens=60)
    assert "Lisbon for 1,450 euros a month on 3 July." in out
    assert all(out.count(f) <= 1 for f in filler)  # repeated sentences are kept once


def test_text_without_punctuation_is_split_into_pieces() -> None:
    words = [f"item{i}" for i in range(400)]
    out = summarize([msg(1, "Bob", " ".join(words))], max_tokens=120)
    body = out.removeprefix("Bob: ").split()
    start = words.index(body[0])
    assert body == words[start: start + len(body)] and len(body) >= 20


def test_a_single_sentence_longer_than_the_budget_is_cut_at_a_word_boundary() -> None:
    text = " ".join(["supercalifragilistic"] * 200)
    out = summarize([msg(1, "Bob", text)], max_tokens=16)
    assert out.startswith("Bob: supercalifragilistic")
    assert all(w == "supercalifragilistic" for w in out.removeprefix("Bob: ").split())
    # A "word" with no spaces at all cannot be cut at a word boundary: it is cut by tokens.
    assert summarize([msg(1, "Bob", "x" * 5000)], max_tokens=16).startswith("Bob: xxx")


def test_non_english_text() -> None:
    chinese = "我今天去了北京。天气很好！我们在天安门广场拍了照片。明天我要去上海见我的朋友李明。"
    out = summarize([msg(1, "小王", chinese, MAY_8)], max_tokens=60)
    assert out.startswith("[8 May 2023]\n小王: ")
    assert any(s in out for s in split_sentences(chinese))
    german = ("Ich heiße Jonas und wohne seit 2015 in Berlin. Danke! "
              "Meine Schwester arbeitet bei Siemens in München. Ok.")
    out = summarize([msg(1, "Jonas", german)], max_tokens=40)
    assert "seit 2015 in Berlin." in out and "Danke" not in out
    russian = "Привет! Я переехал в Москву в 2020 году. Моя сестра Анна работает врачом в Казани."
    out = summarize([msg(1, "Иван", russian)], max_tokens=60)
    assert out.startswith("Иван: ") and "Москву в 2020 году." in out


def test_sentence_splitting_respects_abbreviations_and_decimals() -> None:
    assert split_sentences("Dr. Smith paid $3.50 at 5 p.m. yesterday. Then we left!") == (
        "Dr. Smith paid $3.50 at 5 p.m. yesterday.", "Then we left!")
    assert split_sentences("no punctuation here\nbut a new line") == ("no punctuation here", "but a new line")
    pieces = split_long(" ".join(["word"] * 100))
    assert [len(p.split()) for p in pieces] == [40, 40, 20]


def test_deterministic() -> None:
    rng = random.Random(11)
    pool = ["I moved to Boston in 2019.", "Thanks!", "My sister Emma lives in Denver.", "The weather was nice.",
            "We visited the Louvre in Paris on 4 March.", "I prefer tea over coffee.", "lol ok"]
    sources = [msg(i, rng.choice(["Ann", "Bo"]), " ".join(rng.choices(pool, k=3)), MAY_8 + timedelta(days=i))
               for i in range(1, 40)]
    copies = [SourceText(s.id, s.kind, s.role, s.speaker, str(s.text), s.first_seq, s.last_seq, s.created_at, s.level)
              for s in sources]
    assert summarize(sources, max_tokens=80) == summarize(copies, max_tokens=80)


SENTENCE_POOL = [
    "Caroline moved to Boston in 2019.", "Thanks!", "lol ok", "We met at the café on Main Street at 3 pm.",
    "Actually, it was Tuesday, not Monday.", "Das Wetter in München war schön.", "我们明天见。",
    "https://example.com/a/very/long/path/that/goes/on", "I'll send the report by Friday.",
    "no punctuation just words going on and on", "Émilie a 3 chats et un chien.",
]


@settings(max_examples=80, deadline=None)
@given(
    texts=st.lists(st.one_of(st.sampled_from(SENTENCE_POOL), st.text(max_size=300)), max_size=12),
    budget=st.integers(1, 250),
    dated=st.booleans(),
)
def test_never_exceeds_the_budget(texts: list[str], budget: int, dated: bool) -> None:
    sources = [msg(i, "Ann" if i % 2 else None, t, MAY_8 + timedelta(days=i) if dated else None)
               for i, t in enumerate(texts, start=1)]
    draft = SUMMARIZER.summarize(sources, level=1, is_master=False, max_tokens=budget)
    assert COUNTER.count(draft.content) <= budget
    assert draft.token_count == COUNTER.count(draft.content)


def test_source_text_from_stored_rows() -> None:
    conv, user = uuid4(), uuid4()
    message = Message(id=uuid4(), conversation_id=conv, user_id=user, seq=7, role="assistant",
                      content=[{"type": "text", "text": "Hi"}], text="Hi", external_id=None,
                      token_count=1, created_at=MAY_8, metadata={"speaker": "Melanie"})
    source = SourceText.from_message(message)
    assert (source.kind, source.speaker, source.role, source.first_seq, source.created_at) == (
        "message", "Melanie", "assistant", 7, MAY_8)
    stored = Summary(id=uuid4(), conversation_id=conv, user_id=user, level=2, is_master=False,
                     content="[8 May 2023]\nMelanie: Hi", source_kind="summary", source_ids=[uuid4()],
                     first_seq=1, last_seq=9, token_count=8, edited=False, superseded_by=None,
                     created_at=MAY_25)
    source = SourceText.from_summary(stored)
    assert (source.kind, source.level, source.first_seq, source.last_seq, source.created_at) == (
        "summary", 2, 1, 9, None)


# Speed ---------------------------------------------------------------------------------------

NAMES = ["Caroline", "Melanie"]
TOPICS = ["painting", "the support group", "camping", "my kids", "the pottery class", "a charity run",
          "my new job", "the adoption agency", "a concert", "the beach"]
PLACES = ["Boston", "Lake Tahoe", "Sweden", "the Grand Canyon", "New York City", "Paris"]


def locomo_like(n: int, seed: int = 5) -> list[SourceText]:
    """Messages shaped like LoCoMo turns: two speakers, sessions days apart, 1–4 sentences."""
    rng = random.Random(seed)
    out = []
    when = MAY_8
    for seq in range(1, n + 1):
        if seq % 20 == 1:
            when += timedelta(days=rng.randint(3, 20))
        parts = [rng.choice([
            f"I went to {rng.choice(TOPICS)} in {rng.choice(PLACES)} last {rng.choice(['week', 'Friday', 'month'])}!",
            f"That's so cool, {rng.choice(NAMES)}!", "Thanks so much!", "lol yes",
            f"We spent {rng.randint(2, 12)} hours on {rng.choice(TOPICS)} and it felt amazing.",
            f"What made you start {rng.choice(TOPICS)}?",
            f"My friend {rng.choice(['Anna', 'Joe', 'Priya'])} told me about {rng.choice(TOPICS)} "
            f"in {rng.randint(2015, 2023)}.",
            f"I'm planning to visit {rng.choice(PLACES)} with my family next summer.",
        ]) for _ in range(rng.randint(1, 4))]
        out.append(msg(seq, NAMES[seq % 2], " ".join(parts), when + timedelta(seconds=seq)))
    return out


def run_chain(messages: list[SourceText], params: ChainParams) -> int:
    texts: dict[Hashable, SourceText] = {m.id: m for m in messages}
    chain: list[ChainElement] = []
    calls = 0
    for m in messages:
        chain.append(ChainElement(m.id, 0, m.first_seq, m.last_seq))
        while (action := plan_next(chain, params)) is not None:
            sources = [texts[e.id] for e in action.sources]
            previous = sources[0].text if action.updates_master else None
            draft = SUMMARIZER.summarize(sources, level=action.level, is_master=action.is_master,
                                         max_tokens=params.summary_length, previous=previous)
            assert draft.token_count <= params.summary_length
            new_id = uuid4()
            texts[new_id] = SourceText(new_id, "summary", None, None, draft.content, action.first_seq,
                                       action.last_seq, None, action.level)
            chain = apply_action(chain, action, new_id)
            calls += 1
    return calls


def test_a_600_message_conversation_is_summarized_well_under_a_second() -> None:
    messages = locomo_like(600)
    run_chain(messages[:30], ChainParams())  # warm caches and the vocabulary
    # CPU time of this process, so that other work on a shared machine cannot fail the test.
    start = time.process_time()
    calls = run_chain(messages, ChainParams())
    whole = SUMMARIZER.summarize(messages, level=1, is_master=False, max_tokens=400)
    elapsed = time.process_time() - start
    assert calls == 307 and whole.token_count <= 400
    assert re.match(r"^\[19 May 2023 – \d+ \w+ 2024\]\n", whole.content)
    assert elapsed < 1.0, f"600 messages took {elapsed:.2f}s of CPU"
