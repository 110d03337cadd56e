"""Token accounting and the current-context fitting rules."""

from uuid import uuid4

from memctx.assemble.budget import CachedCounter, pack
from memctx.assemble.current import CurrentItems, fit_current, merge_cuts
from memctx.assemble.types import Cut
from memctx.tokens import get_counter, messages_tokens

COUNTER = get_counter()


def test_messages_tokens_follows_the_chat_formula():
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]
    expected = 3 + sum(3 + COUNTER.count(m["role"]) + COUNTER.count(m["content"]) for m in msgs)
    assert messages_tokens(COUNTER, msgs) == expected


def test_pack_skips_what_does_not_fit_but_keeps_looking():
    packed = pack([5, 8, 3, 1], cost=lambda x: x, budget=10)
    assert packed.kept == [5, 3, 1] and packed.left == [8] and packed.tokens == 9


def test_cached_counter_counts_like_the_real_one():
    cached = CachedCounter(COUNTER, size=2)
    for text in ["one two", "three", "one two", "four five six"]:
        assert cached.count(text) == COUNTER.count(text)


# Line ends that tiktoken's pieces cross (blank lines, indented or space-led lines, "\r\n",
# punctuation before a break) and the memory section's own shape.
MULTILINE = [
    "Memory:\n[Session 3, 8 May 2023]\n- Caroline: I went to the support group yesterday.\n…\n- Melanie: Wow!",
    "a\n\nb", "x.\n\n\n  y\nz", "foo \n bar\nbaz\n", "1234\n5678", "\n\nHello\n- item\n",
    "héllo\n¿qué?\n日本語\n", "a\r\nb\n\tc\n\u00a0d\ne\x1cf\n\x1cg", "end.\n\n", "(a)\n[b]\n{c}\n'd'\n\"e\"",
    "ok!!!\n???\n...\n—dash\n", "   \n   \nword\n",
]


def test_cached_counter_counts_a_text_of_many_lines_like_the_real_one():
    cached = CachedCounter(COUNTER)
    for text in MULTILINE:
        assert cached.count(text) == COUNTER.count(text), repr(text)
        assert cached.count(text) == COUNTER.count(text), repr(text)  # and from its cache


class _Tally:
    """A counter that records the texts it is asked to count."""

    name = COUNTER.name
    lines_add_up = True

    def __init__(self) -> None:
        self.asked: list[str] = []

    def count(self, text: str) -> int:
        self.asked.append(text)
        return COUNTER.count(text)


def test_a_new_section_of_known_lines_is_counted_from_its_lines():
    tally = _Tally()
    cached = CachedCounter(tally)
    lines = ["Memory:", "- Caroline: I went to the support group yesterday.", "- Melanie: Wow, that's brave."]
    for line in lines[:2]:
        cached.count(line + "\n")
    section = "\n".join(lines)
    assert cached.count(section) == COUNTER.count(section)
    assert tally.asked[2:] == [lines[2]]  # only the new line went to the tokenizer


def _turn(seq: int, text: str, role: str = "user") -> dict:
    return {"kind": "message", "id": uuid4(), "level": None, "is_master": None, "content": text, "first_seq": seq,
            "last_seq": seq, "token_count": COUNTER.count(text), "role": role, "external_id": f"D1:{seq}",
            "created_at": None, "speaker": None, "session": 1, "board": None}


def _summary(text: str, master: bool, first: int, last: int) -> dict:
    return {"kind": "summary", "id": uuid4(), "level": 2 if master else 1, "is_master": master, "content": text,
            "first_seq": first, "last_seq": last, "token_count": COUNTER.count(text), "role": None,
            "external_id": None, "created_at": None, "speaker": None, "session": None, "board": None}


def test_current_context_fits_its_share_and_keeps_newest_turns():
    rows = [_summary("Master: they planned a trip to Lisbon in May. " * 5, True, 1, 10),
            _summary("Level one: hotel booked, flights pending. " * 5, False, 1, 5)]
    rows += [_turn(i, f"turn number {i} talks about packing lists and sunscreen " * 2,
                   "user" if i % 2 else "assistant") for i in range(11, 19)]
    items = CurrentItems.from_rows(rows, recent_turns=8)
    share = 120
    cuts = fit_current(items, share, COUNTER, compress=None)
    assert items.cost(COUNTER) <= share
    assert items.turns and items.turns[-1]["last_seq"] == 18  # the newest turn survives
    assert any(c.kind == "summary" and c.action == "dropped" for c in cuts)


def test_compression_replaces_the_older_half_when_past_eighty_percent():
    rows = [_turn(i, f"message {i} about the quarterly budget review and hiring " * 3) for i in range(1, 9)]
    items = CurrentItems.from_rows(rows, recent_turns=8)
    full = items.cost(COUNTER)
    calls = []

    def compress(turns, max_tokens):
        calls.append([t["last_seq"] for t in turns])
        return "Earlier: budget review and hiring were discussed."

    cuts = fit_current(items, int(full / 0.85), COUNTER, compress)
    assert calls == [[1, 2, 3, 4]]
    assert [t["last_seq"] for t in items.turns] == [5, 6, 7, 8]
    assert cuts[0].action == "compressed" and len(cuts[0].ids) == 4
    assert "budget review" in items.messages()[0]["content"]


def test_no_compression_below_eighty_percent():
    rows = [_turn(i, "short") for i in range(1, 5)]
    items = CurrentItems.from_rows(rows, recent_turns=8)
    assert fit_current(items, items.cost(COUNTER) * 2, COUNTER, lambda t, m: "x") == []


def test_merge_cuts_reports_a_run_once():
    cuts = [Cut("dropped", "current", "board", ("key_facts",), "key facts over the share", 5)] * 3
    merged = merge_cuts(cuts)
    assert len(merged) == 1 and merged[0].tokens == 15
