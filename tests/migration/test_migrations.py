"""Migrations apply once each, in order, under a lock, and the Supabase CLI reads the same folder.

The schema they build is compared with a snapshot in test_schema_snapshot.py."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from memctx.app import NotReady, open_app
from memctx.config import Settings
from memctx.migrate import MIGRATIONS_DIR, EmbeddingSpaceMismatch, MigrationError, configure_embedding_space, discover, migrate
from support import run_concurrently

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def empty_db(admin_url):
    name = f"memctx_mig_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    yield make_conninfo(admin_url, dbname=name)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}" with (force)')


def _conn(url):
    return psycopg.connect(url, row_factory=dict_row)


def test_a_fresh_database_gets_every_migration_in_order(empty_db):
    """What they build is checked against tests/migration/schema.sql by test_schema_snapshot.py; the
    roles belong to the cluster, which that comparison leaves out."""
    with _conn(empty_db) as conn:
        assert [m.version for m in migrate(conn)] == [m.version for m in discover()]
        recorded = conn.execute("select version, name from memctx.schema_migrations order by applied_at, version").fetchall()
        assert [(r["version"], r["name"]) for r in recorded] == [(m.version, m.name) for m in discover()]
        assert {"anon", "authenticated", "service_role"} <= {r["rolname"] for r in conn.execute("select rolname from pg_roles")}


def test_rerun_applies_nothing_and_concurrent_runs_apply_once(empty_db):
    def run():
        with _conn(empty_db) as conn:
            return len(migrate(conn))

    results = run_concurrently(run)
    assert sorted(results) == [0, 0, len(discover())]
    with _conn(empty_db) as conn:
        assert migrate(conn) == []
        assert conn.execute("select count(*) as n from memctx.schema_migrations").fetchone()["n"] == len(discover())


def test_a_changed_applied_migration_is_an_error(empty_db, tmp_path):
    for m in discover():
        (tmp_path / m.path.name).write_text(m.sql)
    with _conn(empty_db) as conn:
        migrate(conn, tmp_path)
        first = sorted(tmp_path.glob("*.sql"))[0]
        first.write_text(first.read_text() + "\n-- edited\n")
        with pytest.raises(MigrationError, match="changed after it was applied"):
            migrate(conn, tmp_path)


def test_a_database_that_recorded_an_earlier_text_of_a_reworded_migration_is_up_to_date(database_url):
    """Migrations whose comments alone were reworded after release: a database migrated with the
    earlier text keeps working, and its record moves to today's text; any other checksum is still
    refused."""
    from memctx.migrate import EARLIER_CHECKSUMS, discover

    version = min(EARLIER_CHECKSUMS)
    (earlier,) = EARLIER_CHECKSUMS[version]
    today = next(m for m in discover() if m.version == version).checksum
    with _conn(database_url) as conn:
        conn.execute("update memctx.schema_migrations set checksum = %s where version = %s", (earlier, version))
        conn.commit()
        assert migrate(conn) == []
        assert conn.execute("select checksum from memctx.schema_migrations where version = %s",
                            (version,)).fetchone()["checksum"] == today
        conn.execute("update memctx.schema_migrations set checksum = 'other' where version = %s", (version,))
        conn.commit()
        with pytest.raises(MigrationError, match="changed after it was applied"):
            migrate(conn)


class OtherSpace:
    """An embedder of another model and dimension; startup must refuse it before embedding anything."""

    name = "another-model"

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim

    def embed(self, texts):
        raise AssertionError("a refused embedder is never called")


def test_embedding_space_mismatch_is_a_clear_startup_error(database_url):
    with pytest.raises(EmbeddingSpaceMismatch, match="384-dimensional"):
        open_app(Settings(database_url=database_url), embedder=OtherSpace(dim=32))


def test_unmigrated_database_is_a_clear_startup_error(empty_db):
    with pytest.raises(NotReady, match="memctx migrate"):
        open_app(Settings(database_url=empty_db), embedder=OtherSpace())


# The Supabase CLI's rules for supabase/migrations/ (supabase/cli, pkg/migration): a file is applied
# only if its name matches this, in order of the version it names, once per version; a first file
# named <14 digits>_init.sql dated before 2021-12-09 is skipped as an old CLI's baseline.
SUPABASE_MIGRATION = re.compile(r"^([0-9]+)_(.*)\.sql$")
SUPABASE_SKIPPED_INIT = re.compile(r"^[0-9]{14}_init\.sql$")


def test_supabase_reads_the_one_migrations_folder_through_a_link():
    linked = ROOT / "supabase" / "migrations"
    assert linked.is_symlink() and linked.resolve() == MIGRATIONS_DIR.resolve()
    # What the CLI lists (a directory read through the link) is exactly what `memctx migrate` applies.
    listed = sorted(p.name for p in linked.iterdir())
    assert listed == sorted(m.path.name for m in discover())
    versions = [int(SUPABASE_MIGRATION.match(name).group(1)) for name in listed]
    assert len(set(versions)) == len(versions) and versions == sorted(versions)
    assert not SUPABASE_SKIPPED_INIT.match(listed[0])
    assert (ROOT / "supabase" / "config.toml").exists()


def test_migrations_avoid_postgres_18_only_features():
    """Supabase runs Postgres 15 and 17: no uuidv7(), virtual generated columns, RETURNING OLD/NEW."""
    for m in discover():
        sql = m.sql.lower()
        for feature in ("uuidv7(", " virtual", "returning old", "returning new"):
            assert feature not in sql, f"{m.path.name} uses the Postgres 18 feature {feature.strip()!r}"


def test_pgvector_is_installed_outside_the_memctx_schema(empty_db):
    from memctx import db
    from memctx.config import Settings

    with db.connect(empty_db, Settings(database_url=empty_db)) as conn:  # the app's search_path: memctx first
        migrate(conn)
        schema = conn.execute("select extnamespace::regnamespace::text as s from pg_extension where extname = 'vector'").fetchone()
        assert schema["s"] == "public"
        assert conn.execute("show search_path").fetchone()["search_path"].startswith("memctx")


def _migrated_before(conn, tmp_path, version: int) -> None:
    """A database as a deployment left it before `version`: only the migrations before it (copied
    into `tmp_path`, where `_apply` adds that one), and a 3-dimensional embedding space."""
    for m in discover():
        if m.version < version:
            (tmp_path / m.path.name).write_text(m.sql)
    migrate(conn, tmp_path)
    configure_embedding_space(conn, "test-model", 3)


def _apply(conn, tmp_path, version: int) -> list[int]:
    """Migration `version` applied to such a database; the versions applied."""
    (tmp_path / f"{version:04d}_x.sql").write_text(next(m.sql for m in discover() if m.version == version))
    return [m.version for m in migrate(conn, tmp_path)]


def test_0005_derives_text_of_existing_rows_and_removes_writes_into_another_users_conversation(empty_db, tmp_path):
    a, b = uuid.uuid4(), uuid.uuid4()
    with _conn(empty_db) as conn:
        _migrated_before(conn, tmp_path, 5)
        conv_a = conn.execute("insert into memctx.conversations (user_id) values (%s) returning id", (a,)).fetchone()["id"]
        conv_b = conn.execute("insert into memctx.conversations (user_id) values (%s) returning id", (b,)).fetchone()["id"]
        # Before 0005 a plain-SQL insert of typed blocks stored empty text, and the worker embedded it.
        insert = "insert into memctx.messages (conversation_id, role, content, text, embedding, token_count) values (%s, %s, %s, %s, %s, %s)"
        conn.execute(insert, (conv_a, "user", Jsonb([{"type": "tool_result", "content": "Booked the ferry"}]), "", "[1,0,0]", 0))
        conn.execute(insert, (conv_a, "assistant", Jsonb([{"type": "thinking", "text": "private"}]), "", "[0,1,0]", 0))
        conn.execute(insert, (conv_a, "user", Jsonb([]), "kept as written", "[0,0,1]", 3))
        # B's rows filed under A's conversation, through the hole 0005 closes; B's own rows stay.
        for conv in (conv_a, conv_b):
            conn.execute("insert into memctx.working_memory_chunks (conversation_id, user_id, chunk_text) values (%s, %s, 'w')", (conv, b))
            conn.execute("insert into memctx.outbox (user_id, conversation_id, kind) values (%s, %s, 'summarize')", (b, conv))
            conn.execute("insert into memctx.summary_boards (conversation_id, user_id) values (%s, %s)", (conv, b))
        conn.commit()
        assert _apply(conn, tmp_path, 5) == [5]
        rows = conn.execute("select text, embedding is null as unembedded, token_count from memctx.messages order by seq").fetchall()
        assert rows == [{"text": "Booked the ferry", "unembedded": True, "token_count": None},  # the worker embeds it
                        {"text": "", "unembedded": True, "token_count": 0},
                        {"text": "kept as written", "unembedded": False, "token_count": 3}]
        requests = conn.execute("select user_id, conversation_id, kind from memctx.outbox where processed_at is null "
                                "and user_id = %s and kind <> 'message'", (a,)).fetchall()
        assert requests == [{"user_id": a, "conversation_id": conv_a, "kind": "summarize"}]
        for table in ("working_memory_chunks", "outbox", "summary_boards"):
            left = conn.execute(f"select conversation_id from memctx.{table} where user_id = %s", (b,)).fetchall()
            assert left == [{"conversation_id": conv_b}], table


def test_0016_counts_the_lexemes_of_existing_and_new_messages(empty_db, tmp_path):
    """BM25's mean length comes from conversations.lexeme_count (memctx/sql/retrieve.sql): the
    migration fills it from the stored messages, and the insert trigger keeps it, statement by
    statement, as it keeps message_count."""
    user = uuid.uuid4()
    insert = ("insert into memctx.messages (conversation_id, role, content, text) "
              "select %s, 'user', '[]'::jsonb, t from unnest(%s::text[]) t")
    counted = ("select c.id, c.lexeme_count, c.message_count, (select coalesce(sum(length(m.tsv)), 0) "
               "from memctx.messages m where m.conversation_id = c.id) as stored from memctx.conversations c")

    def counts(conn):
        rows = {r["id"]: r for r in conn.execute(counted).fetchall()}
        assert all(r["lexeme_count"] == r["stored"] for r in rows.values())
        return [(rows[c]["lexeme_count"], rows[c]["message_count"]) for c in convs]

    with _conn(empty_db) as conn:
        _migrated_before(conn, tmp_path, 16)
        convs = [conn.execute("insert into memctx.conversations (user_id) values (%s) returning id", (user,)).fetchone()["id"]
                 for _ in range(3)]
        conn.execute(insert, (convs[0], ["We hiked the Dolomites in June", "The jazz concert was loud", ""]))
        conn.execute(insert, (convs[1], ["Sourdough again, third loaf this week"]))
        conn.commit()
        assert _apply(conn, tmp_path, 16) == [16]
        assert counts(conn) == [(6, 3), (4, 1), (0, 0)]  # hike, dolomit, june, jazz, concert, loud; ...
        conn.execute(insert, (convs[0], ["Kayaking at sunset", "ok"]))
        conn.execute(insert, (convs[2], ["The museum opens late on Fridays"]))
        conn.commit()
        assert counts(conn) == [(9, 5), (4, 1), (4, 1)]


def test_0017_gives_existing_messages_the_day_they_were_said_and_counts_their_lexemes_again(empty_db, tmp_path):
    """The rewritten tsvector carries the said day (three lexemes more per text message), and
    BM25's lexeme_count (0016) follows it, for the stored rows and for new ones."""
    user = uuid.uuid4()
    insert = ("insert into memctx.messages (conversation_id, role, content, text, created_at) "
              "select %s, 'user', '[]'::jsonb, t, '2023-06-03 23:30+00' from unnest(%s::text[]) t")
    counted = ("select c.lexeme_count, (select sum(length(m.tsv)) from memctx.messages m "
               "where m.conversation_id = c.id) as stored from memctx.conversations c where c.id = %s")
    with _conn(empty_db) as conn:
        _migrated_before(conn, tmp_path, 17)
        conv = conn.execute("insert into memctx.conversations (user_id) values (%s) returning id", (user,)).fetchone()["id"]
        conn.execute(insert, (conv, ["We hiked the Dolomites in June", ""]))
        conn.commit()
        assert conn.execute(counted, (conv,)).fetchone() == {"lexeme_count": 3, "stored": 3}
        conn.commit()
        assert _apply(conn, tmp_path, 17) == [17]
        tsv = [r["tsv"] for r in conn.execute("select tsv::text as tsv from memctx.messages order by seq")]
        assert tsv == ["'d20230603':9 'dolomit':4 'hike':2 'june':6 'm06':8 'm202306':7", ""]
        assert conn.execute(counted, (conv,)).fetchone() == {"lexeme_count": 6, "stored": 6}
        conn.execute(insert, (conv, ["Kayaking at sunset"]))
        conn.commit()
        assert conn.execute(counted, (conv,)).fetchone() == {"lexeme_count": 11, "stored": 11}


def test_0022_asks_a_catch_up_of_the_conversations_stored_with_long_messages(empty_db, tmp_path):
    """What was stored before passages existed is cut by the worker: each conversation with a
    message over the default MEMCTX_PASSAGE_MIN_TOKENS gets one 'summarize' request, no other."""
    user = uuid.uuid4()
    with _conn(empty_db) as conn:
        _migrated_before(conn, tmp_path, 22)
        convs = [conn.execute("insert into memctx.conversations (user_id) values (%s) returning id",
                              (user,)).fetchone()["id"] for _ in range(2)]
        for conv, tokens in ((convs[0], [30, 640, 700]), (convs[1], [30, 120])):
            for n in tokens:
                conn.execute("insert into memctx.messages (conversation_id, role, text, token_count) "
                             "values (%s, 'assistant', 'a reply', %s)", (conv, n))
        conn.execute("update memctx.outbox set processed_at = now()")
        conn.commit()
        assert _apply(conn, tmp_path, 22) == [22]
        pending = conn.execute("select conversation_id, kind from memctx.outbox where processed_at is null").fetchall()
        assert pending == [{"conversation_id": convs[0], "kind": "summarize"}]
        message = conn.execute("select id from memctx.messages where token_count = 640").fetchone()["id"]
        conn.execute("insert into memctx.working_memory_chunks (conversation_id, user_id, chunk_text, chunk_type, "
                     "message_id, part) values (%s, %s, 'a reply', 'passage', %s, 0)", (convs[0], user, message))
        conn.commit()
        with pytest.raises(psycopg.errors.UniqueViolation):  # one row per passage of a message
            conn.execute("insert into memctx.working_memory_chunks (conversation_id, user_id, chunk_text, "
                         "chunk_type, message_id, part) values (%s, %s, 'again', 'passage', %s, 0)",
                         (convs[0], user, message))
        conn.rollback()
        with pytest.raises(psycopg.errors.ForeignKeyViolation):  # a passage belongs to its user's message
            conn.execute("insert into memctx.working_memory_chunks (conversation_id, user_id, chunk_text, "
                         "chunk_type, message_id, part) values (%s, %s, 'x', 'passage', %s, 1)",
                         (convs[0], user, uuid.uuid4()))
        conn.rollback()


def test_0023_gives_stored_messages_their_codes_and_new_ones_get_theirs_on_insert(empty_db, tmp_path):
    """The sign-bit codes of the quantized search (message_codes): filled for the embedded
    messages a database already holds, then written by the insert trigger; none for a message
    without an embedding."""
    user = uuid.uuid4()
    insert = ("insert into memctx.messages (conversation_id, role, content, text, embedding) "
              "select %s, 'user', '[]'::jsonb, t, e::vector from unnest(%s::text[], %s::text[]) x(t, e)")
    codes = ("select m.text, c.bits::text as bits from memctx.messages m left join memctx.message_codes c "
             "on c.message_id = m.id and c.user_id = m.user_id order by m.seq")
    with _conn(empty_db) as conn:
        _migrated_before(conn, tmp_path, 23)
        conv = conn.execute("insert into memctx.conversations (user_id) values (%s) returning id", (user,)).fetchone()["id"]
        conn.execute(insert, (conv, ["stored", "not embedded", ""], ["[0.5,-1,2]", None, None]))
        conn.commit()
        assert _apply(conn, tmp_path, 23) == [23]
        assert conn.execute(codes).fetchall() == [{"text": "stored", "bits": "101"}, {"text": "not embedded", "bits": None},
                                                  {"text": "", "bits": None}]
        conn.execute(insert, (conv, ["new"], ["[-0.1,0.2,-0.3]"]))
        conn.commit()
        assert conn.execute(codes).fetchall()[-1] == {"text": "new", "bits": "010"}


def test_0025_leaves_stored_messages_uncounted_and_counts_new_ones(empty_db, tmp_path):
    """Each message's lexeme count (read by BM25 instead of its out-of-line tsvector): the
    migration rewrites no stored row (their count stays null, read as length(tsv)); a new
    message, and an edited one, get the length of their tsvector, and 0016's per-conversation
    sum follows the counts."""
    user = uuid.uuid4()
    insert = ("insert into memctx.messages (conversation_id, role, content, text, created_at) "
              "select %s, 'user', '[]'::jsonb, t, '2023-06-03 10:00+00' from unnest(%s::text[]) t")
    rows = "select text, lexemes, length(tsv) as stored from memctx.messages order by seq"
    with _conn(empty_db) as conn:
        _migrated_before(conn, tmp_path, 25)
        conv = conn.execute("insert into memctx.conversations (user_id) values (%s) returning id", (user,)).fetchone()["id"]
        conn.execute(insert, (conv, ["We hiked the Dolomites in June", ""]))
        conn.commit()
        assert _apply(conn, tmp_path, 25) == [25]
        assert conn.execute(rows).fetchall() == [{"text": "We hiked the Dolomites in June", "lexemes": None, "stored": 6},
                                                 {"text": "", "lexemes": None, "stored": 0}]
        conn.execute(insert, (conv, ["Kayaking at sunset"]))
        conn.execute("update memctx.messages set text = 'We hiked' where text like 'We hiked%%'")
        conn.commit()
        assert conn.execute(rows).fetchall() == [{"text": "We hiked", "lexemes": 4, "stored": 4},
                                                 {"text": "", "lexemes": None, "stored": 0},
                                                 {"text": "Kayaking at sunset", "lexemes": 5, "stored": 5}]
        assert conn.execute("select lexeme_count from memctx.conversations where id = %s",
                            (conv,)).fetchone()["lexeme_count"] == 6 + 5  # inserts add their counts


def test_0027_gives_conversations_the_names_of_their_speakers_and_inserts_add_new_ones(empty_db, tmp_path):
    """Each conversation's speaker names (read by a search's query analysis instead of every
    message of its scope): the migration fills them from the stored messages, per conversation
    and in order, without empty names; an insert adds the names new to its conversation, once."""
    user = uuid.uuid4()
    insert = ("insert into memctx.messages (conversation_id, role, content, text, metadata) "
              "select %s, 'user', '[]'::jsonb, 'said', m from unnest(%s::jsonb[]) m")
    names = "select id, speakers from memctx.conversations where user_id = %s order by created_at, id"
    with _conn(empty_db) as conn:
        _migrated_before(conn, tmp_path, 27)
        convs = [conn.execute("insert into memctx.conversations (user_id, created_at) values (%s, now() + %s * "
                              "interval '1 s') returning id", (user, i)).fetchone()["id"] for i in range(3)]
        conn.execute(insert, (convs[0], [Jsonb({"speaker": "Melanie"}), Jsonb({"speaker": "Caroline"}),
                                         Jsonb({"speaker": "Melanie"}), Jsonb({"speaker": ""}), Jsonb({})]))
        conn.execute(insert, (convs[1], [Jsonb({"session": 1})]))
        conn.commit()
        assert _apply(conn, tmp_path, 27) == [27]
        assert [r["speakers"] for r in conn.execute(names, (user,))] == [["Caroline", "Melanie"], [], []]
        conn.execute(insert, (convs[0], [Jsonb({"speaker": "Caroline"})]))  # known: unchanged
        conn.execute(insert, (convs[1], [Jsonb({"speaker": "Zoe"}), Jsonb({"speaker": "Adam"}), Jsonb({"speaker": "Zoe"})]))
        conn.execute(insert, (convs[0], [Jsonb({"speaker": "Bob"})]))
        conn.commit()
        assert [r["speakers"] for r in conn.execute(names, (user,))] == [["Bob", "Caroline", "Melanie"], ["Adam", "Zoe"], []]
