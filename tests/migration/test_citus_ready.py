"""The schema can be distributed by user_id with Citus, as docs/SCALING.md describes.

Read from the catalog of a database built from every migration: each table is classified below
(distributed by user_id, reference, or local to the coordinator, with the reason), and the
distributed ones keep what Citus requires of them: user_id in every primary key, unique constraint
and unique index, and on both sides of every foreign key between them, matched column to column.
A new table or key that breaks this fails here, not on the day of the move.

No Citus server is needed: the rules are the ones Citus enforces at create_distributed_table()
(https://docs.citusdata.com/en/stable/develop/reference_ddl.html), checked on the catalog.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from memctx.migrate import configure_embedding_space, discover, migrate
from memctx.sql import QUERIES

DISTRIBUTION_COLUMN = "user_id"

# Distributed by user_id and colocated: everything one user's request reads or writes.
DISTRIBUTED = {
    "memctx.conversations", "memctx.messages", "memctx.message_codes", "memctx.message_terms", "memctx.summaries",
    "memctx.summary_boards", "memctx.conversation_summaries", "memctx.working_memory_chunks", "memctx.outbox",
    "memctx.context_requests", "memctx.idempotency_keys", "memctx.search_cache", "memctx.shadow_requests",
    "memctx.profile_items", "memctx.profile_sources", "memctx.profile_progress", "memctx.procedures",
    "memctx.procedure_sources", "memctx.feedback",
}

# Copied whole to every node: small, and read before or beside any one user's rows.
REFERENCE = {
    # Authentication looks a key up by its hash before the user is known, and the hash is unique
    # across users; one row per key, so a few MB even at a million keys.
    "memctx.api_keys": "looked up by key_hash before the user is known; key_hash is unique across users",
    # One row: the embedding model and dimension every vector column was built for.
    "memctx.embedding_space": "a single row read by every node",
}

# Left on the coordinator (or in a plain Postgres beside the cluster): never joined with tenant rows.
LOCAL = {
    "memctx.schema_migrations": "bookkeeping of `memctx migrate`, which runs on the coordinator",
    # dramatiq-postgres's broker: jobs are claimed with FOR UPDATE SKIP LOCKED across all users and
    # woken by LISTEN/NOTIFY, which need one node; a job names a conversation, it holds no user rows.
    "memctx_queue.queue": "the Postgres broker's job queue (dramatiq-postgres)",
    "memctx_queue.result": "the Postgres broker's results",
    "memctx_queue.worker": "the Postgres broker's worker heartbeats",
}

# Ordinary and partitioned tables of the database's own schemas, leaving out extensions' tables and
# partitions (a partition follows its parent).
TABLES = """
select c.oid::regclass::text as name
  from pg_class c
 where c.relkind in ('r', 'p') and not c.relispartition
   and c.relnamespace <> 'information_schema'::regnamespace and c.relnamespace::regnamespace::text !~ '^pg_'
   and not exists (select from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid
                                             and d.deptype = 'e')
 order by 1
"""

# Every unique key: primary keys, unique and exclusion constraints, and unique indexes made without a
# constraint (a partial one such as summaries_one_live_master_idx). Expression columns show as null.
KEYS = """
select i.indexrelid::regclass::text as name, i.indrelid::regclass::text as tbl,
       array(select a.attname from unnest(i.indkey) with ordinality k(attnum, n)
                               left join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
              order by k.n) as columns
  from pg_index i
 where i.indisunique or exists (select from pg_constraint x where x.conindid = i.indexrelid and x.contype = 'x')
 order by 1
"""

FOREIGN_KEYS = """
select f.conname as name, f.conrelid::regclass::text as tbl, f.confrelid::regclass::text as ref,
       array(select a.attname from unnest(f.conkey) with ordinality k(attnum, n)
                               join pg_attribute a on a.attrelid = f.conrelid and a.attnum = k.attnum
              order by k.n) as columns,
       array(select a.attname from unnest(f.confkey) with ordinality k(attnum, n)
                               join pg_attribute a on a.attrelid = f.confrelid and a.attnum = k.attnum
              order by k.n) as ref_columns
  from pg_constraint f
 where f.contype = 'f'
 order by 1
"""

DISTRIBUTION_COLUMNS = """
select a.attrelid::regclass::text as tbl, format_type(a.atttypid, a.atttypmod) as type, a.attnotnull as not_null
  from pg_attribute a
 where a.attrelid = any(%(tables)s::regclass[]) and a.attname = %(column)s and not a.attisdropped
"""


def citus_problems(conn: psycopg.Connection, distributed: set[str]) -> list[str]:
    """What would stop create_distributed_table(t, 'user_id') for each of `distributed`, in words."""
    problems = []
    columns = {r["tbl"]: r for r in conn.execute(DISTRIBUTION_COLUMNS,
                                                 {"tables": sorted(distributed), "column": DISTRIBUTION_COLUMN})}
    for table in sorted(distributed - columns.keys()):
        problems.append(f"{table} has no {DISTRIBUTION_COLUMN} column")
    for table, row in sorted(columns.items()):
        if row["type"] != "uuid" or not row["not_null"]:
            problems.append(f"{table}.{DISTRIBUTION_COLUMN} is {row['type']}{'' if row['not_null'] else ' null'}, "
                            "not uuid not null: it could not be colocated with the other tables")
    for key in conn.execute(KEYS):
        if key["tbl"] in distributed and DISTRIBUTION_COLUMN not in key["columns"]:
            problems.append(f"unique key {key['name']} on {key['tbl']} {tuple(key['columns'])} lacks {DISTRIBUTION_COLUMN}")
    for fk in conn.execute(FOREIGN_KEYS):
        if fk["tbl"] not in distributed and fk["ref"] in distributed:
            problems.append(f"foreign key {fk['name']}: {fk['tbl']} is not distributed but references {fk['ref']}")
        if fk["tbl"] in distributed and fk["ref"] in distributed:
            pairs = list(zip(fk["columns"], fk["ref_columns"]))
            if (DISTRIBUTION_COLUMN, DISTRIBUTION_COLUMN) not in pairs:
                problems.append(f"foreign key {fk['name']} {fk['tbl']}{tuple(fk['columns'])} -> "
                                f"{fk['ref']}{tuple(fk['ref_columns'])} does not join {DISTRIBUTION_COLUMN} "
                                f"to {DISTRIBUTION_COLUMN}")
    return problems


@pytest.fixture
def catalog(database_url):
    with psycopg.connect(database_url, row_factory=dict_row, autocommit=True) as conn:
        yield conn


def test_every_table_is_classified_once(catalog):
    classes = [DISTRIBUTED, set(REFERENCE), set(LOCAL)]
    assert not (DISTRIBUTED & set(REFERENCE) or DISTRIBUTED & set(LOCAL) or set(REFERENCE) & set(LOCAL))
    tables = {r["name"] for r in catalog.execute(TABLES)}
    assert tables == set().union(*classes), (
        "classify each table in tests/migration/test_citus_ready.py and docs/SCALING.md: "
        f"unclassified {sorted(tables - set().union(*classes))}, gone {sorted(set().union(*classes) - tables)}")


def test_the_tenant_tables_can_be_distributed_by_user_id(catalog):
    assert citus_problems(catalog, DISTRIBUTED) == []


def test_reference_tables_reference_no_tenant_table(catalog):
    """Citus lets a distributed table reference a reference table, never the other way round."""
    for fk in catalog.execute(FOREIGN_KEYS):
        assert not (fk["tbl"] in REFERENCE and fk["ref"] in DISTRIBUTED), fk


def test_the_check_names_each_kind_of_key_that_citus_refuses(catalog):
    """The check above is only worth its empty list if it finds these."""
    catalog.execute("""
        create table memctx.probe_parent (id uuid primary key, user_id uuid not null, unique (id, user_id));
        create table memctx.probe_child (id uuid not null, user_id uuid not null, parent_id uuid,
                                         primary key (id, user_id),
                                         foreign key (parent_id) references memctx.probe_parent (id),
                                         foreign key (parent_id, id) references memctx.probe_parent (id, user_id));
        create unique index probe_child_one_idx on memctx.probe_child (parent_id) where parent_id is not null;
        create table memctx.probe_loose (id uuid primary key, user_id text);
        create table memctx.probe_orphan (id uuid primary key);
    """)
    problems = citus_problems(catalog, {"memctx.probe_parent", "memctx.probe_child", "memctx.probe_loose",
                                        "memctx.probe_orphan"})
    assert sorted(problems) == sorted([
        "memctx.probe_orphan has no user_id column",
        "unique key memctx.probe_orphan_pkey on memctx.probe_orphan ('id',) lacks user_id",
        "memctx.probe_loose.user_id is text null, not uuid not null: it could not be colocated with the other tables",
        "unique key memctx.probe_loose_pkey on memctx.probe_loose ('id',) lacks user_id",
        "unique key memctx.probe_parent_pkey on memctx.probe_parent ('id',) lacks user_id",
        "unique key memctx.probe_child_one_idx on memctx.probe_child ('parent_id',) lacks user_id",
        "foreign key probe_child_parent_id_fkey memctx.probe_child('parent_id',) -> memctx.probe_parent('id',) "
        "does not join user_id to user_id",
        "foreign key probe_child_parent_id_id_fkey memctx.probe_child('parent_id', 'id') -> "
        "memctx.probe_parent('id', 'user_id') does not join user_id to user_id",
    ])


def test_0012_keeps_existing_rows_and_their_links(admin_url, tmp_path):
    """0012 on a database with a conversation's messages, summary chain, board and outbox rows:
    every row is kept, the board upsert finds its new key, and the keys still refuse what they did."""
    for m in discover():
        if m.version < 12:
            (tmp_path / m.path.name).write_text(m.sql)
    name = f"memctx_citus_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    user = uuid.uuid4()
    try:
        with psycopg.connect(make_conninfo(admin_url, dbname=name), row_factory=dict_row) as conn:
            migrate(conn, tmp_path)
            configure_embedding_space(conn, "test-model", 3)
            conv, other = (conn.execute("insert into memctx.conversations (user_id) values (%s) returning id",
                                        (user,)).fetchone()["id"] for _ in range(2))
            ids = [conn.execute("insert into memctx.messages (conversation_id, user_id, role, text, external_id) "
                                "values (%s, %s, 'user', %s, %s) returning id", (conv, user, f"turn {i}", f"t{i}")
                                ).fetchone()["id"] for i in range(3)]
            summary = ("insert into memctx.summaries (conversation_id, user_id, level, is_master, content, source_kind, "
                       "source_ids, first_seq, last_seq) values (%s, %s, 1, %s, %s, 'message', %s, 1, 3) returning id")
            old = conn.execute(summary, (conv, user, False, "old", ids)).fetchone()["id"]
            new = conn.execute(summary, (conv, user, True, "new", ids)).fetchone()["id"]
            elsewhere = conn.execute(summary, (other, user, False, "elsewhere", ids)).fetchone()["id"]
            conn.execute("update memctx.summaries set superseded_by = %s, superseded_at = now() where id = %s", (new, old))
            conn.execute("insert into memctx.summary_boards (conversation_id, user_id, current_summary) "
                         "values (%s, %s, 'board')", (conv, user))
            conn.commit()
            before = {t: conn.execute(f"select * from memctx.{t} order by 1, 2").fetchall() for t in ROWS}
            conn.commit()

            (tmp_path / "0012_keys_carry_user_id.sql").write_text(next(m.sql for m in discover() if m.version == 12))
            assert [m.version for m in migrate(conn, tmp_path)] == [12]
            assert {t: conn.execute(f"select * from memctx.{t} order by 1, 2").fetchall() for t in ROWS} == before
            assert [r["seq"] for r in before["outbox"]] == [1, 2, 3]

            upserted = conn.execute(QUERIES["upsert_board"], {
                "conversation_id": conv, "user_id": user, "summary": "board v2", "items": Jsonb({}),
                "message_count": 3, "last_seq": 3, "update_frequency": 5, "counts": Jsonb({})})
            assert upserted.rowcount == 1
            assert conn.execute("select count(*) as n, max(current_summary) as s from memctx.summary_boards").fetchone() \
                == {"n": 1, "s": "board v2"}
            conn.commit()
            with pytest.raises(psycopg.errors.ForeignKeyViolation):
                conn.execute("update memctx.summaries set superseded_by = %s where id = %s", (elsewhere, new))
            conn.rollback()
            with pytest.raises(psycopg.errors.UniqueViolation):
                conn.execute("insert into memctx.messages (conversation_id, user_id, role, text, external_id) "
                             "values (%s, %s, 'user', 'again', 't1')", (conv, user))
            conn.rollback()
            conn.execute("delete from memctx.conversations where id = %s", (conv,))
            assert conn.execute("select count(*) as n from memctx.messages").fetchone()["n"] == 0
            assert conn.execute("select count(*) as n from memctx.summaries").fetchone()["n"] == 1  # elsewhere's
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'drop database if exists "{name}" with (force)')


# The tables whose rows test_0012_keeps_existing_rows_and_their_links compares around the migration.
ROWS = ("conversations", "messages", "summaries", "summary_boards", "outbox")
