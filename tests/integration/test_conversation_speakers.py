"""A search's speaker names come from the names each conversation keeps (migration 0027): every
write path adds the names new to its conversation, a user-wide search knows all of the user's,
and a tenant reads its own and no other's."""

from __future__ import annotations

import uuid

from psycopg.types.json import Jsonb

from memctx.models import NewMessage
from memctx.retrieve import MemorySearch
from memctx.sql import QUERIES

# every conversation of a user whose names are not the distinct names of its messages
MISMATCHED = """
select count(*) as n
  from memctx.conversations c
 where c.user_id = %(user)s
   and c.speakers is distinct from (select coalesce(array_agg(distinct m.metadata ->> 'speaker'
                                                              order by m.metadata ->> 'speaker'), '{}')
                                      from memctx.messages m
                                     where m.conversation_id = c.id and m.user_id = c.user_id
                                       and m.metadata ->> 'speaker' <> '')
"""


def test_every_write_path_keeps_the_conversations_speakers(app, embedder):
    user, stranger = uuid.uuid4(), uuid.uuid4()
    first = app.store.create_conversation(user, external_id="store")
    second = app.store.create_conversation(user, external_id="sql")
    app.store.append_messages(user, first.id, [
        NewMessage.build("user", "We hiked the Dolomites in June", metadata={"speaker": "Melanie"}),
        NewMessage.build("assistant", "The jazz concert was loud", metadata={"speaker": "Caroline"}),
        NewMessage.build("user", "Kayaking at sunset", metadata={"speaker": "Melanie"})], embed=False)
    with app.pool.connection() as conn:  # plain SQL, several rows in one statement
        conn.execute("insert into memctx.messages (conversation_id, user_id, role, text, metadata) "
                     "select %s, %s, 'user', 'said', m from unnest(%s::jsonb[]) m",
                     (second.id, user, [Jsonb({"speaker": "Jon"}), Jsonb({"speaker": ""}), Jsonb({})]))
    with app.for_user(user).pool.connection() as conn:  # a tenant's SQL under RLS: the trigger runs as it
        conn.execute("insert into memctx.messages (conversation_id, user_id, role, text, metadata) "
                     "values (%s, %s, 'user', 'written by a client', %s)", (second.id, user, Jsonb({"speaker": "Gina"})))
        assert {r["speaker"] for r in conn.execute(QUERIES["conversation_speakers"],
                                                   {"user_id": user, "conversation_id": None})} \
            == {"Caroline", "Gina", "Jon", "Melanie"}
    with app.pool.connection() as conn:
        assert conn.execute(MISMATCHED, {"user": user}).fetchone()["n"] == 0
    search = MemorySearch(app.pool, embedder)
    assert search.speakers(user, None) == ("Caroline", "Gina", "Jon", "Melanie")
    assert search.speakers(user, first.id) == ("Caroline", "Melanie")
    assert search.speakers(user, second.id) == ("Gina", "Jon")
    assert MemorySearch(app.for_user(stranger).pool, embedder).speakers(user, None) == ()
