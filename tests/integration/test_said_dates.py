"""The day a turn was said is in its full-text index (migration 0017): a question that names a
month or a day finds the turns said then, against a real Postgres."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.json import Jsonb

from memctx.app import open_app
from memctx.assemble.render import session_header
from memctx.models import NewMessage
from memctx.retrieve import search_memories

MAY, JUNE = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc), datetime(2023, 6, 3, 23, 30, tzinfo=timezone.utc)

CHAT = [
    (MAY, "user", "We went to the lake."),
    (MAY, "assistant", "Sounds like a perfect afternoon."),
    (JUNE, "user", "We were at the lake again with the kids, my parents and the neighbours; everyone swam until sunset."),
    (JUNE, "assistant", "They must have slept well after that!"),
]


def _store(app, user):
    conv = app.store.create_conversation(user, external_id="lake")
    app.store.append_messages(user, conv.id, [
        NewMessage.build(role, text, external_id=f"D{i}", created_at=at, metadata={"speaker": role, "session": i // 2 + 1})
        for i, (at, role, text) in enumerate(CHAT)])
    return conv


def test_a_question_naming_a_month_or_a_day_finds_the_turn_said_then(app):
    user = uuid.uuid4()
    conv = _store(app, user)
    for question in ("What did we do at the lake in June 2023?", "What did we do at the lake in June?",
                     "What did we do at the lake on 3 June, 2023?", "What did we do at the lake on June 3rd, 2023?"):
        lexical = sorted((m for m in search_memories(app, user, question, conv.id, limit=10)
                          if m.provenance.ranks.get("lexical") is not None),
                         key=lambda m: m.provenance.ranks["lexical"])
        assert lexical[0].fragments[0].external_id == "D2" and "swam" in lexical[0].text, question
    # without a date both lake turns match the one term, and the shorter May turn ranks first
    lexical = [m for m in search_memories(app, user, "What did we do at the lake?", conv.id, limit=10)
               if m.provenance.ranks.get("lexical") == 1]
    assert lexical[0].fragments[0].external_id == "D0"


def test_the_said_day_is_in_utc_and_a_message_without_searchable_text_has_no_lexemes(app):
    user = uuid.uuid4()
    conv = _store(app, user)
    insert = ("insert into memctx.messages (conversation_id, user_id, role, content, created_at) "
              "values (%s, %s, 'assistant', %s, %s)")
    with app.pool.connection() as conn, conn.transaction():
        conn.execute("set local time zone 'Asia/Tokyo'")  # 23:30 UTC on 3 June is 4 June there
        conn.execute(insert, (conv.id, user, Jsonb([{"type": "text", "text": "Good night!"}]), JUNE))
        conn.execute(insert, (conv.id, user, Jsonb([{"type": "thinking", "text": "private"}]), JUNE))
    with app.pool.connection() as conn:
        rows = conn.execute("select text, tsv::text as tsv from memctx.messages where conversation_id = %s "
                            "order by seq", (conv.id,)).fetchall()
    assert "'d20230508'" in rows[0]["tsv"] and "'m202305'" in rows[0]["tsv"] and "'m05'" in rows[0]["tsv"]
    assert "'d20230603'" in rows[2]["tsv"] and "'d20230603'" in rows[4]["tsv"] and "night" in rows[4]["tsv"]
    assert rows[5]["text"] == "" and rows[5]["tsv"] == ""


def test_a_turn_is_shown_on_the_day_it_is_searched_by_whatever_the_servers_time_zone(admin_url, database_url,
                                                                                    settings, embedder):
    """memctx's sessions run in UTC (memctx.db.connect_kwargs): where the server's TimeZone is
    Tokyo's, the turn said at 23:30 UTC on 3 June, found by "3 June", is shown under 3 June too,
    not under Tokyo's 4 June."""
    name = conninfo_to_dict(database_url)["dbname"]
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("alter database {} set timezone = 'Asia/Tokyo'").format(sql.Identifier(name)))
    with psycopg.connect(database_url) as conn:
        assert conn.execute("show timezone").fetchone()[0] == "Asia/Tokyo"
    with open_app(settings, embedder=embedder) as app:
        with app.pool.connection() as conn:
            assert conn.execute("show timezone").fetchone()["TimeZone"] == "UTC"
        user = uuid.uuid4()
        conv = _store(app, user)
        found = search_memories(app, user, "What did we do at the lake on 3 June, 2023?", conv.id, limit=10)
        june = next(f for m in found for f in m.fragments if f.external_id == "D2")
        assert june.time == JUNE and session_header(june) == "[3 June 2023]"
