"""Helpers several test modules share (tests/ is on pytest's pythonpath: `from support import …`)."""

from __future__ import annotations

import json
import threading

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from memctx.models import NewMessage
from memctx.summarize.types import SummaryDraft

# The tables that hold a user's rows; each has RLS on user_id.
TABLES = ("conversations", "messages", "summaries", "summary_boards", "working_memory_chunks",
          "conversation_summaries", "outbox")


def as_user(database_url: str, user) -> psycopg.Connection:
    """A connection acting as Supabase's `authenticated` role with `user` in its JWT claims, as
    the Supabase client does: RLS decides what it sees."""
    conn = psycopg.connect(database_url, row_factory=dict_row, options="-c search_path=memctx,public")
    conn.execute("select set_config('request.jwt.claims', %s, false)", (json.dumps({"sub": str(user), "role": "authenticated"}),))
    conn.execute("set role authenticated")
    conn.commit()  # session settings survive the rollbacks the tests do
    return conn


def say_by_sql(app, conversation_id, texts, *, first: str = "user") -> None:
    """`texts` inserted with plain SQL in one transaction, as any Postgres client would, the roles
    alternating from `first` (the database derives nothing from memctx's own code)."""
    second = "assistant" if first == "user" else "user"
    msgs = [NewMessage.build(first if i % 2 == 0 else second, t) for i, t in enumerate(texts)]
    with app.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
        cur.executemany("insert into memctx.messages (conversation_id, role, content, text) values (%s, %s, %s, %s)",
                        [(conversation_id, m.role, Jsonb(m.blocks), m.text) for m in msgs])


def row_counts(conn) -> dict[str, int]:
    """Rows in every table of the memctx schema."""
    tables = [r["relname"] for r in conn.execute(
        "select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace "
        "where n.nspname = 'memctx' and c.relkind in ('r', 'p') order by 1")]
    return {t: conn.execute(sql.SQL("select count(*) as n from memctx.{}").format(sql.Identifier(t))).fetchone()["n"]
            for t in tables}


def seed_every_table(app, user):
    """A conversation of `user` with a row in every table of TABLES, including a live master
    summary; returns the conversation."""
    conv = app.store.create_conversation(user, external_id="c")
    app.store.append_messages(user, conv.id, [NewMessage.build("user", "my secret"), NewMessage.build("assistant", "ok")])
    with app.pool.connection() as conn:
        conn.execute("insert into memctx.summary_boards (conversation_id, user_id) values (%s, %s)", (conv.id, user))
        conn.execute("""insert into memctx.summaries (conversation_id, user_id, level, is_master, content, source_kind,
                                                      source_ids, first_seq, last_seq)
                        select %s, %s, 1, true, 'sum', 'message', array_agg(id), 1, 2
                          from memctx.messages where conversation_id = %s""", (conv.id, user, conv.id))
        conn.execute("insert into memctx.working_memory_chunks (conversation_id, user_id, chunk_text) values (%s, %s, 'w')",
                     (conv.id, user))
        conn.execute("insert into memctx.conversation_summaries (conversation_id, user_id, summary) values (%s, %s, 's')",
                     (conv.id, user))
    return conv


def run_concurrently(fn, n: int = 3) -> list:
    """Call `fn` in `n` threads at once; its results, or the first exception any call raised."""
    results, errors = [], []

    def run():
        try:
            results.append(fn())
        except Exception as exc:  # noqa: BLE001 - raised below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


class Verbose:
    """A summarizer (an LLM, say) that writes far more than it was asked for; the board it
    leaves to `inner`."""

    name = "verbose"

    def __init__(self, inner):
        self.inner = inner

    def summarize(self, sources, *, level, is_master, max_tokens, previous=None):
        text = " ".join(s.text for s in sources) * 3
        return SummaryDraft(content=text, token_count=len(text), summarizer=self.name)

    def update_board(self, board, new_messages, *, max_tokens):
        return self.inner.update_board(board, new_messages, max_tokens=max_tokens)


def seen_state(app, user, conversation_id):
    """Everything a user sees of a conversation's live chain and board, ids excluded: board items
    cite message ids, which differ between conversations, so their external ids stand in."""
    from memctx.pipeline import catchup
    from memctx.pipeline.board import get_board

    chain = catchup.live_chain(app, user, conversation_id)
    board = get_board(app, user, conversation_id)
    seen = board and (board.summary, {name: [(i.text, i.group, [s.external_id for s in i.sources])
                                             for i in board.section(name)] for name in board.items},
                      board.message_count, board.last_seq, board.entity_counts, board.topic_counts)
    return [(c.kind, c.level, c.is_master, c.first_seq, c.last_seq, c.text, c.token_count) for c in chain], seen


# A 16-turn trip-planning chat (Priya and a guide), with two corrections: landing on 24 → 25 May,
# a budget of 1,500 → 2,000 euros. (role, speaker, text)
TRIP = [
    ("user", "Priya", "Hi! We are planning five days in Lisbon with my partner Tomás in late May."),
    ("assistant", "Guide", "Lovely plan. Late May is warm but not yet crowded in Lisbon."),
    ("user", "Priya", "Tomás is vegetarian, and I don't eat shellfish."),
    ("assistant", "Guide", "Noted: vegetarian dishes for Tomás and no shellfish for you."),
    ("user", "Priya", "We land on 24 May at 9:40 and fly home on 29 May."),
    ("assistant", "Guide", "That gives you five nights and four full days in the city."),
    ("user", "Priya", "Our budget is 1,500 euros for the two of us, flights already paid."),
    ("assistant", "Guide", "At that budget a guesthouse in Graça at 110 euros a night works well."),
    ("user", "Priya", "I'll buy the Pena Palace tickets tonight."),
    ("assistant", "Guide", "Good idea: the morning slots at Pena Palace sell out first."),
    ("user", "Priya", "Actually, we land on 25 May, not 24 — I misread the booking."),
    ("assistant", "Guide", "Thanks for the correction: arrival on 25 May, so four nights."),
    ("user", "Priya", "Sorry, the budget is 2,000 euros now that my bonus came in."),
    ("assistant", "Guide", "With 2,000 euros you could add a fado dinner in Alfama."),
    ("user", "Priya", "Tomás's birthday is on 28 May, so one dinner should be special."),
    ("assistant", "Guide", "A vegetarian tasting menu in Príncipe Real would suit his birthday."),
]


# A diary of dated entries around the weekend before `today` (weeks start on Monday): what a user
# asks "What did I do last weekend?" about. The fence entry, two weeks before, says "last weekend"
# itself; only the moment of asking tells which weekend is meant.
DIARY_ASK = "What did I do last weekend?"
FENCE = "Last weekend I painted the fence."
KAYAK = "Went kayaking on the river with Marta in the morning."
STEW = "Cooked a big lentil stew and froze half of it."
DIARY_FILLER = ["Long day at work, the quarterly report is finally done.", "Dentist appointment, no cavities.",
                "Read two chapters of the new mystery novel.", "Rainy evening, watched a documentary about whales.",
                "Met Tom for coffee and talked about his new job.", "Fixed the leaking kitchen tap."]


def diary_days(today):
    """The days of the diary's entries for a question asked on `today`: {text: day}."""
    from datetime import timedelta

    monday = today - timedelta(days=today.weekday())
    saturday = monday - timedelta(days=2)
    weekdays = [monday - timedelta(days=d) for d in (3, 4, 6, 7, 11, 12)]  # Thursdays to Tuesdays, no weekend
    return {FENCE: saturday - timedelta(days=14), KAYAK: saturday, STEW: saturday + timedelta(days=1),
            **dict(zip(DIARY_FILLER, weekdays))}


def write_diary(app, user, today, name: str = "diary"):
    """The diary as the user's conversation `name`, each entry said at 20:00 UTC of its day."""
    from datetime import datetime, time, timezone

    conv = app.store.create_conversation(user, external_id=name)
    entries = sorted(diary_days(today).items(), key=lambda item: item[1])
    app.store.append_messages(user, conv.id, [
        NewMessage.build("user", text, created_at=datetime.combine(day, time(20), timezone.utc))
        for text, day in entries])
    return conv


def weekend_first(memory_text: str) -> bool:
    """Whether a memory section holds last weekend's two entries as more relevant (nearer its end,
    the query) than the fence's, if it holds that at all."""
    at = _lines_of(memory_text)
    return at[KAYAK] is not None and at[STEW] is not None and (at[FENCE] is None or at[FENCE] < min(at[KAYAK], at[STEW]))


def fence_first(memory_text: str) -> bool:
    """Whether a memory section holds the fence's entry as more relevant than last weekend's."""
    at = _lines_of(memory_text)
    return at[FENCE] is not None and all(at[t] is None or at[t] < at[FENCE] for t in (KAYAK, STEW))


def _lines_of(memory_text: str) -> dict[str, int | None]:
    lines = memory_text.splitlines()
    return {text: next((i for i, line in enumerate(lines) if text in line), None) for text in (FENCE, KAYAK, STEW)}
