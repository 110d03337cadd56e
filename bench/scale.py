"""Scale benchmark: memory search and get_working_context latency on a large table.

Loads `--messages` messages into a fresh database on the configured server, builds the HNSW
index after the bulk load, VACUUM ANALYZEs, runs the worker's pass that gives users of
`user_index_min_messages` an HNSW index of their own (memctx/pipeline/user_index.py: a worker
does it within a sweep interval of a user reaching it), then measures p50 / p95 of: conversation-scoped
search, user-wide search, get_working_context (2,000-token budget, conversation and user scope)
and global HNSW top-10 — and reports load and index build times and the bytes per row of the
messages table and of each of its indexes. Triggers are skipped during the load
(session_replication_role = replica) and seq is set directly, as a bulk import would.

Two shapes:
- uniform: users × `--conversations-per-user` × `--per-conversation` messages, random unit
  vectors, sentences from a 60-word vocabulary, generated inside Postgres; random queries from
  the same words.
- realistic (bench/realistic.py): LoCoMo dev turns recombined and perturbed, embedded with the
  real embedder (a pool of `--pool` distinct texts, cached under ~/.cache/memctx-bench), messages
  per user and turns per conversation long-tailed around the same two means, and a heavy user
  with `--heavy-messages` messages, one conversation `--long-conversation` turns long; queries
  are perturbed LoCoMo questions. The headline keys then time the heavy user: its long
  conversation (search_conversation, get_working_context_2000) and its whole history
  (search_user, get_working_context_user_2000); `ordinary_*` time 200 other conversations.
  The messages are written in the order they would have arrived, every conversation's turns
  among those of the others by their time, as a deployment's inserts lay them in the heap;
  `--order shuffled` writes each turn among random others, as a deployment with many sessions at
  once would, and `--order conversation` each conversation's turns together, as a bulk import
  does (the report's `longest_conversation` counts the pages its rows lie on).

    python bench/scale.py --messages 1000000      # ~15 min of HNSW build on 2 cores
    python bench/scale.py --messages 100000 --json
    python bench/scale.py --shape realistic --database memctx_scale_real --queries 100 --json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import uuid
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import realistic  # noqa: E402
from memctx import db  # noqa: E402
from memctx.app import open_app, prepare_database  # noqa: E402
from memctx.assemble import assembler_for  # noqa: E402
from memctx.config import Settings  # noqa: E402
from memctx.embed import LocalMiniLM  # noqa: E402
from memctx.pipeline import user_index  # noqa: E402
from memctx.retrieve import MemorySearch, SearchOptions  # noqa: E402
from memctx.sql import QUERIES  # noqa: E402

WORDS = ("pottery hiking dolomites budget review portuguese jazz concert bike brake sourdough bread porto flat "
         "wedding sister dog collie garden tomatoes marathon training guitar lessons novel chapter museum painting "
         "camping lake kayak recipe curry school exam project deadline promotion interview coffee tea mountains "
         "beach sunset photography camera festival parade volunteer shelter adoption counseling workshop").split()

LOAD_SQL = """
insert into memctx.messages (id, conversation_id, user_id, seq, role, content, text, external_id, token_count,
                             embedding, created_at, metadata)
select gen_random_uuid(), c.id, c.user_id, s.seq, case when s.seq %% 2 = 1 then 'user' else 'assistant' end,
       '[]'::jsonb, t.text, 'm' || s.seq, 8 + (s.seq %% 30),
       (select array_agg(random() - 0.5) from generate_series(1, 384) g where g > 0 * s.seq)::vector,
       now() - interval '1 minute' * (%(per)s - s.seq), jsonb_build_object('speaker', case when s.seq %% 2 = 1
       then 'Ana' else 'Ben' end, 'session', 1 + s.seq / 20)
  from memctx.conversations c
  cross join generate_series(1, %(per)s) as s(seq)
  cross join lateral (
    select string_agg(w[1 + floor(random() * array_length(w, 1))::int], ' ') as text
      from (select %(words)s::text[] as w) v, generate_series(1, 12 + (s.seq %% 9)) g
     where g > 0 * s.seq
  ) t
 where c.user_id = any(%(users)s::uuid[])
"""

# conversations.lexeme_count (0016) of the loaded messages, from each row's count (0025, written
# with triggers off too): left at 0, BM25's mean length would be 1 lexeme in every scope. And
# their speakers (0027), which the count trigger keeps too: left empty, a query's names would be
# searched as words.
CONVERSATION_LEXEMES_SQL = """
update memctx.conversations c
   set lexeme_count = s.lexemes, speakers = s.speakers
  from (select m.user_id, m.conversation_id, sum(m.lexemes) as lexemes,
               coalesce(array_agg(distinct m.metadata ->> 'speaker' order by m.metadata ->> 'speaker')
                          filter (where m.metadata ->> 'speaker' <> ''), '{}') as speakers
          from memctx.messages m group by 1, 2) s
 where c.id = s.conversation_id and c.user_id = s.user_id
"""


def pct(values, q):
    return round(float(np.percentile(values, q)), 2)


def timed(fn, n):
    out = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t) * 1000)
    return {"p50_ms": pct(out, 50), "p95_ms": pct(out, 95), "p99_ms": pct(out, 99), "max_ms": round(max(out), 2), "n": n}


def create_database(admin_url: str, name: str, embedder) -> str:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}" with (force)')
        conn.execute(f'create database "{name}"')
    url = make_conninfo(admin_url, dbname=name)
    prepare_database(Settings(database_url=url), url, embedder)
    return url


# The tables the messages' insert triggers write (migrations 0023, 0026): a load with triggers
# off fills them with `fill_<table>` (memctx/sql/store.sql).
SIDE_TABLES = ("message_codes", "message_terms")


def vacuum_analyze(conn: psycopg.Connection) -> None:
    """VACUUM ANALYZE messages and the side tables (visibility maps set for index-only scans)."""
    for table in ("messages", *SIDE_TABLES):
        conn.execute(f"vacuum analyze memctx.{table}")


def load(url: str, fill, log, *, hnsw: str = "after", maintenance_work_mem: str = "1GB",
         build_workers: int = 2) -> dict:
    """Bulk-load with `fill(conn)` (triggers off), the HNSW index built after the load (from
    scratch, `build_workers` parallel maintenance workers) or kept during it (`hnsw="before"`:
    each row inserted into the graph, as live traffic does); then VACUUM ANALYZE and sizes."""
    timings = {"hnsw": hnsw}
    with psycopg.connect(url, autocommit=True, options=f"-c search_path={db.SEARCH_PATH.replace(' ', '')}") as conn:
        conn.execute("set session_replication_role = replica")
        index_build_settings(conn, maintenance_work_mem, build_workers)
        if hnsw == "after":
            conn.execute("drop index memctx.messages_embedding_hnsw")  # rebuilt after the load
        t = time.perf_counter()
        fill(conn)
        for table in SIDE_TABLES:  # what the insert triggers would have written
            conn.execute(QUERIES[f"fill_{table}"])
        conn.execute(CONVERSATION_LEXEMES_SQL)  # and BM25's mean length, which the count trigger keeps
        timings["load_s"] = round(time.perf_counter() - t, 1)
        log(f"loaded in {timings['load_s']} s")
        if hnsw == "after":
            timings["hnsw_build_s"] = create_hnsw(conn, "messages_embedding_hnsw")
            log(f"HNSW built in {timings['hnsw_build_s']} s")
        t = time.perf_counter()
        vacuum_analyze(conn)
        conn.execute("analyze memctx.conversations")
        timings["vacuum_analyze_s"] = round(time.perf_counter() - t, 1)
        timings.update(sizes(conn))
    return timings


def fill_uniform(users: list[uuid.UUID], convs: int, per: int, log):
    def fill(conn: psycopg.Connection) -> None:
        conn.execute("insert into memctx.conversations (user_id, external_id, message_count, last_seq, last_message_at) "
                     "select u, 'conv-' || c, %(per)s, %(per)s, now() from unnest(%(users)s::uuid[]) u, "
                     "generate_series(1, %(convs)s) c", {"users": users, "convs": convs, "per": per})
        batch = max(1, 20_000 // (convs * per) or 1)
        for start in range(0, len(users), batch):
            conn.execute(LOAD_SQL, {"per": per, "words": list(WORDS), "users": users[start:start + batch]})
            log(f"loaded users {min(start + batch, len(users))}/{len(users)}")
    return fill


def fill_realistic(args, embedder, log):
    source = realistic.Source.read(args.source)
    pool, vectors = realistic.embedded_pool(source, args.pool, embedder, args.cache, log)
    conversations = realistic.shape(args.messages, args.per_conversation, args.conversations_per_user,
                                    heavy_messages=args.heavy_messages, long_conversation=args.long_conversation)

    def fill(conn: psycopg.Connection) -> None:
        db.configure_connection(conn)
        realistic.load(conn, conversations, pool, vectors, log, order=args.order)
    return fill


def index_build_settings(conn: psycopg.Connection, maintenance_work_mem: str, build_workers: int) -> None:
    conn.execute(f"set maintenance_work_mem = '{maintenance_work_mem}'")
    conn.execute(f"set max_parallel_maintenance_workers = {int(build_workers)}")


def create_hnsw(conn: psycopg.Connection, name: str) -> float:
    """Build an HNSW cosine index on the messages' embeddings (0001's parameters); returns the
    build's seconds."""
    t = time.perf_counter()
    conn.execute(sql.SQL("create index {} on memctx.messages using hnsw (embedding vector_cosine_ops) "
                         "with (m = 16, ef_construction = 64)").format(sql.Identifier(name)))
    return round(time.perf_counter() - t, 1)


def user_indexes(url: str) -> dict:
    """What the worker's first pass over a loaded database does (memctx/pipeline/user_index.py):
    an HNSW index of their own for every user at `user_index_min_messages`, one after another."""
    with open_app(Settings(database_url=url, pool_min_size=1, pool_max_size=2)) as app:
        built, seconds = [], 0.0
        while True:
            changes = user_index.maintain(app)
            if not changes.built:
                return {"built": len(built), "seconds": round(seconds, 1)}
            built += changes.built
            seconds += changes.seconds


def sizes(conn: psycopg.Connection) -> dict:
    """Database and messages-table bytes, bytes per message of the heap (with TOAST) and each index,
    and the heap pages holding the longest conversation's rows."""
    row = conn.execute("select pg_database_size(current_database()), pg_total_relation_size('memctx.messages'), "
                       "pg_table_size('memctx.messages'), (select count(*) from memctx.messages)").fetchone()
    rows = max(1, row[3])
    # how the heap holds the longest conversation: its rows and the pages they are on (`--order`)
    longest = conn.execute("select count(*), count(distinct (m.ctid::text::point)[0]) from memctx.messages m "
                           "where m.conversation_id = (select id from memctx.conversations "
                           "order by message_count desc limit 1)").fetchone()
    indexes = {name.removeprefix("memctx."): b for name, b in conn.execute(
        "select indexrelid::regclass::text, pg_relation_size(indexrelid) from pg_index "
        "where indrelid = 'memctx.messages'::regclass order by 1")}
    side = {table: conn.execute(f"select pg_total_relation_size('memctx.{table}')").fetchone()[0]
            for table in SIDE_TABLES}
    return {"database_bytes": row[0], "messages_table_bytes": row[1], "rows": row[3],
            "hnsw_bytes": indexes.get("messages_embedding_hnsw"),
            "longest_conversation": {"rows": longest[0], "heap_pages": longest[1]},
            "bytes_per_row": {"heap_and_toast": round(row[2] / rows), "total": round(row[1] / rows),
                              **{name: round(b / rows) for name, b in indexes.items()},
                              **{f"{name} (table and indexes)": round(b / rows) for name, b in side.items()}}}


def timed_set(search, assembler, picks, queries, n) -> dict:
    """The four latencies over (user, conversation) picks, the i-th query with the i-th pick."""
    user_scope = replace(assembler.options, scope="user")
    pick = lambda i: picks[(i * 7919) % len(picks)]  # noqa: E731
    return {
        "search_conversation": timed(lambda i: search.search(pick(i)[0], queries[i], pick(i)[1], limit=10), n),
        "search_user": timed(lambda i: search.search(pick(i)[0], queries[i], None, limit=10), n),
        "get_working_context_2000": timed(lambda i: assembler.get_working_context(*pick(i), queries[i], 2000), n),
        "get_working_context_user_2000": timed(
            lambda i: assembler.get_working_context(*pick(i), queries[i], 2000, options=user_scope), n),
    }


def measure(url: str, users: list[uuid.UUID], n: int, rng, shape: str, source: Path) -> dict:
    # conversation scope unless a call says user, as these figures were measured
    settings = Settings(database_url=url, pool_min_size=2, pool_max_size=4, context_scope="conversation")
    with open_app(settings) as app:
        search = MemorySearch(app.pool, app.embedder, SearchOptions.from_settings(settings))
        assembler = assembler_for(app)
        with app.pool.connection() as conn:
            if shape == "realistic":
                queries = realistic.queries(realistic.Source.read(source), n)
                long = conn.execute("select user_id, id from memctx.conversations where user_id = %s "
                                    "order by message_count desc limit 1", (realistic.HEAVY_USER,)).fetchone()
                heavy = [(long["user_id"], long["id"])]
                picks = [(r["user_id"], r["id"]) for r in conn.execute(
                    "select user_id, id from memctx.conversations where user_id <> %s order by md5(id::text) "
                    "limit 200", (realistic.HEAVY_USER,))]
            else:
                queries = [" ".join(rng.choice(WORDS, 6)) for _ in range(n)]
                picks = [(r["user_id"], r["id"]) for r in conn.execute(
                    "select id, user_id from memctx.conversations where user_id = any(%s)", (users[:200],))]
        for i in range(10):  # warm up: embedder session, pool, caches
            assembler.get_working_context(*picks[i % len(picks)], queries[i % n], 2000)
        if shape == "realistic":
            out = timed_set(search, assembler, heavy, queries, n)
            out.update({f"ordinary_{k}": v for k, v in timed_set(search, assembler, picks, queries, n).items()})
        else:
            out = timed_set(search, assembler, picks, queries, n)
        vecs = app.embedder.embed(queries[:n])
        with app.pool.connection() as conn:
            if conn.execute("select to_regclass('memctx.messages_embedding_hnsw') is null as missing").fetchone()["missing"]:
                return out  # the HNSW build was skipped or interrupted: no global search to time
            conn.execute("set hnsw.ef_search = 40")

            def global_top10(i):
                conn.execute(QUERIES["search_global_dense"], {"query_vec": vecs[i], "k_dense": 10}).fetchall()

            out["global_hnsw_top10"] = timed(global_top10, n)
        return out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, refused with a usage error when the realistic shape would leave no
    ordinary users to time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=("uniform", "realistic"), default="uniform")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--per-conversation", type=int, default=100, help="realistic: the mean")
    parser.add_argument("--conversations-per-user", type=int, default=10, help="realistic: the mean")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--database", default="memctx_scale")
    parser.add_argument("--reuse", action="store_true",
                        help="measure an already loaded database (e.g. after an interrupted HNSW build)")
    parser.add_argument("--json", action="store_true")
    repo = Path(__file__).resolve().parent.parent
    realistic_args = parser.add_argument_group("realistic shape")
    realistic_args.add_argument("--source", type=Path, default=repo.parent / "shared/bench/locomo/locomo-dev.json",
                                help="LoCoMo JSON whose turns and questions are recombined")
    realistic_args.add_argument("--pool", type=int, default=8_192, help="distinct texts embedded (cached)")
    realistic_args.add_argument("--cache", type=Path, default=Path.home() / ".cache/memctx-bench")
    realistic_args.add_argument("--heavy-messages", type=int, default=100_000)
    realistic_args.add_argument("--long-conversation", type=int, default=5_000)
    realistic_args.add_argument("--order", choices=realistic.ORDERS, default="arrival",
                                help="the messages' order in the heap: as they would have arrived (turns of "
                                     "all conversations by their time), each among random others (many "
                                     "sessions at once), or each conversation's together (a bulk import)")
    parser.add_argument("--hnsw", choices=("after", "before"), default="after",
                        help="build the HNSW index after the load, or keep it during the load")
    parser.add_argument("--maintenance-work-mem", default="1GB", help="for the HNSW build")
    parser.add_argument("--build-workers", type=int, default=2, help="max_parallel_maintenance_workers")
    parser.add_argument("--no-user-indexes", action="store_true",
                        help="measure without the worker's pass that gives heavy users an HNSW index of their own")
    args = parser.parse_args(argv)
    if args.queries < 1:
        parser.error("--queries must be at least 1")
    if args.shape == "realistic" and args.messages <= args.heavy_messages:
        parser.error(f"--messages {args.messages} leaves no messages for ordinary users after the heavy user's "
                     f"--heavy-messages {args.heavy_messages}: give --messages more than --heavy-messages "
                     f"(e.g. --heavy-messages {args.messages // 2})")
    return args


def main() -> None:
    args = parse_args()
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    per, convs = args.per_conversation, args.conversations_per_user
    users = [uuid.UUID(int=i + 1) for i in range(max(1, args.messages // (per * convs)))]
    settings = Settings()
    admin_url = db.database_url(settings)
    embedder = LocalMiniLM()
    started = time.perf_counter()
    if args.reuse:
        url = make_conninfo(admin_url, dbname=args.database)
        prepare_database(Settings(database_url=url), url, embedder)  # migrations added since the load
        with psycopg.connect(url, autocommit=True) as conn:
            t = time.perf_counter()
            vacuum_analyze(conn)
            loaded = {"vacuum_analyze_s": round(time.perf_counter() - t, 1), **sizes(conn)}
    else:
        fill = fill_uniform(users, convs, per, log) if args.shape == "uniform" else fill_realistic(args, embedder, log)
        url = create_database(admin_url, args.database, embedder)
        loaded = load(url, fill, log, hnsw=args.hnsw, maintenance_work_mem=args.maintenance_work_mem,
                      build_workers=args.build_workers)
    if not args.no_user_indexes:
        log("the worker's pass over heavy users")
        loaded["user_indexes"] = user_indexes(url)
    log("measuring")
    load_before = os.getloadavg()
    results = measure(url, users, args.queries, np.random.default_rng(1), args.shape, args.source)
    report = {"shape": args.shape, "messages": loaded["rows"], **({"users": len(users), "conversations": len(users) * convs,
              "messages_per_conversation": per} if args.shape == "uniform" else
              {"pool": args.pool, "order": None if args.reuse else args.order}),
              **loaded, "latency": results,
              "load_average": {"before": [round(x, 2) for x in load_before],
                               "after": [round(x, 2) for x in os.getloadavg()]},
              "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
              "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "total_s": round(time.perf_counter() - started, 1)}
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for key, value in report.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
