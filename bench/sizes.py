"""Sizes benchmark: rows, heap, TOAST and each index of every memctx table, per row (docs/SCALING.md).

Measures an existing database (one `bench/scale.py` loaded, say), or first loads LoCoMo with real
text and embeddings through the default pipeline, twice: as long conversations (one per sample,
user 00000000-…-0001) and as one closed conversation per session (a user per sample), each caught
up and closed, so that summaries, boards and long-term summaries exist as production writes them.

    python bench/scale.py --messages 100000 --database memctx_scaling --json   # then:
    python bench/sizes.py --database memctx_scaling
    python bench/sizes.py --database memctx_sizes --locomo /work/shared/bench/locomo/locomo-dev.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memctx import db  # noqa: E402
from memctx.app import open_app  # noqa: E402
from memctx.config import Settings  # noqa: E402
from memctx.embed import LocalMiniLM  # noqa: E402
from memctx.evaluate.run import prepare, prepare_sessions  # noqa: E402
from memctx.pipeline.longterm import close_conversation  # noqa: E402
from scale import create_database  # noqa: E402  (bench/ is on the path when run as a script)

LONG_USER = uuid.UUID(int=1)

TABLES = """
select c.oid::regclass::text as name, pg_relation_size(c.oid) as heap,
       coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) as toast
  from pg_class c
 where c.relkind = 'r' and c.relnamespace = 'memctx'::regnamespace
 order by 1
"""
INDEXES = """
select indexrelid::regclass::text, pg_relation_size(indexrelid) from pg_index where indrelid = %s::regclass order by 1
"""
# Rows and live bytes per shape of conversation: the long conversations' user, and everyone else.
SHAPES = """
select case when user_id = %(long)s then 'long' else 'sessions' end as shape, count(*) as rows,
       round(avg(pg_column_size(x.*))) as avg_row_bytes {extra}
  from memctx.{table} x group by 1 order by 1
"""
SHAPE_EXTRA = {
    "messages": ", round(avg(pg_column_size(text))) as avg_text_bytes, "
                "round(avg(pg_column_size(tsv))) as avg_tsv_bytes",
    "summaries": ", count(*) filter (where superseded_at is null) as live, "
                 "count(*) filter (where embedding is null) as unembedded",
    "summary_boards": "", "conversation_summaries": "", "conversations": "",
}


def load_locomo(url: str, path: Path, embedder) -> float:
    started = time.perf_counter()
    with open_app(Settings(database_url=url), embedder=embedder) as app:
        ids, _ = prepare(app, path, LONG_USER)
        for conversation in ids.values():
            close_conversation(app, LONG_USER, conversation, catch_up_first=False, explicit=True)
        prepare_sessions(app, path)
    return round(time.perf_counter() - started, 1)


def measure(url: str, shapes: bool) -> dict:
    out: dict = {}
    with psycopg.connect(url, autocommit=True) as conn:
        for name, heap, toast in conn.execute(TABLES).fetchall():
            rows = conn.execute(f"select count(*) from {name}").fetchone()[0]
            indexes = dict(conn.execute(INDEXES, (name,)).fetchall())
            per = (lambda b, rows=rows: round(b / rows, 1)) if rows else (lambda b: None)
            out[name] = {"rows": rows, "heap_bytes": heap, "toast_bytes": toast, "heap_per_row": per(heap),
                         "toast_per_row": per(toast),
                         "indexes": {i: {"bytes": b, "per_row": per(b)} for i, b in indexes.items()}}
        if shapes:
            for table, extra in SHAPE_EXTRA.items():
                cur = conn.execute(SHAPES.format(table=table, extra=extra), {"long": LONG_USER})
                columns = [c.name for c in cur.description]
                out[f"memctx.{table}"]["shapes"] = [
                    {c: float(v) if c.startswith("avg") else v for c, v in zip(columns, row)} for row in cur.fetchall()]
        out["database_bytes"] = conn.execute("select pg_database_size(current_database())").fetchone()[0]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True)
    parser.add_argument("--locomo", type=Path, help="load this LoCoMo file into a fresh --database first")
    args = parser.parse_args()
    admin_url = db.database_url(Settings())
    report = {}
    url = make_conninfo(admin_url, dbname=args.database)
    if args.locomo:
        embedder = LocalMiniLM()
        url = create_database(admin_url, args.database, embedder)
        report["load_s"] = load_locomo(url, args.locomo, embedder)
    report.update(measure(url, shapes=bool(args.locomo)))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
