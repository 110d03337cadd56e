"""Scale benchmark: memory search and get_working_context latency on a large synthetic table.

Loads `--messages` synthetic messages (users × conversations × messages per conversation; random
unit vectors, sentences drawn from a fixed vocabulary, generated inside Postgres) into a fresh
database on the configured server, builds the indexes after the bulk load, ANALYZEs, then
measures p50 / p95 of: conversation-scoped search, user-wide search, get_working_context
(2,000-token budget) and global HNSW top-10 — and reports index build time and database size.
Triggers are skipped during the load (session_replication_role = replica) and seq is set
directly, as a bulk import would.

    python bench/scale.py --messages 1000000      # ~15 min of HNSW build on 2 cores
    python bench/scale.py --messages 100000 --json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import uuid
from datetime import datetime, timezone

import numpy as np
import psycopg
from psycopg.conninfo import make_conninfo

from memctx import db
from memctx.app import open_app, prepare_database
from memctx.assemble import assembler_for
from memctx.config import Settings
from memctx.embed import LocalMiniLM
from memctx.retrieve import MemorySearch, SearchOptions
from memctx.sql import QUERIES

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


def pct(values, q):
    return round(float(np.percentile(values, q)), 2)


def timed(fn, n):
    out = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t) * 1000)
    return {"p50_ms": pct(out, 50), "p95_ms": pct(out, 95), "n": n}


def create_database(admin_url: str, name: str, embedder) -> str:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}" with (force)')
        conn.execute(f'create database "{name}"')
    url = make_conninfo(admin_url, dbname=name)
    prepare_database(Settings(database_url=url), url, embedder)
    return url


def load(url: str, users: int, convs: int, per: int, log) -> dict:
    user_ids = [uuid.UUID(int=i + 1) for i in range(users)]
    timings = {}
    with psycopg.connect(url, autocommit=True, options=f"-c search_path={db.SEARCH_PATH.replace(' ', '')}") as conn:
        conn.execute("drop index memctx.messages_embedding_hnsw")  # rebuilt after the load
        conn.execute("set session_replication_role = replica")
        t = time.perf_counter()
        conn.execute("insert into memctx.conversations (user_id, external_id, message_count, last_seq, last_message_at) "
                     "select u, 'conv-' || c, %(per)s, %(per)s, now() from unnest(%(users)s::uuid[]) u, "
                     "generate_series(1, %(convs)s) c", {"users": user_ids, "convs": convs, "per": per})
        batch = max(1, 20_000 // (convs * per) or 1)
        for start in range(0, users, batch):
            conn.execute(LOAD_SQL, {"per": per, "words": list(WORDS), "users": user_ids[start:start + batch]})
            log(f"loaded users {min(start + batch, users)}/{users}")
        timings["load_s"] = round(time.perf_counter() - t, 1)
        conn.execute("set maintenance_work_mem = '1GB'")
        t = time.perf_counter()
        conn.execute("create index messages_embedding_hnsw on memctx.messages using hnsw (embedding vector_cosine_ops) "
                     "with (m = 16, ef_construction = 64)")
        timings["hnsw_build_s"] = round(time.perf_counter() - t, 1)
        t = time.perf_counter()
        conn.execute("vacuum analyze memctx.messages")
        conn.execute("analyze memctx.conversations")
        timings["vacuum_analyze_s"] = round(time.perf_counter() - t, 1)
        size = conn.execute("select pg_database_size(current_database()) as b, "
                            "pg_total_relation_size('memctx.messages') as m, "
                            "pg_relation_size('memctx.messages_embedding_hnsw') as h").fetchone()
        timings.update(database_bytes=size[0], messages_table_bytes=size[1], hnsw_bytes=size[2])
    return {"users": user_ids, **timings}


def measure(url: str, users: list[uuid.UUID], n: int, rng) -> dict:
    settings = Settings(database_url=url, pool_min_size=2, pool_max_size=4)
    with open_app(settings) as app:
        convs = {}
        with app.pool.connection() as conn:
            for row in conn.execute("select id, user_id from memctx.conversations where user_id = any(%s)",
                                    (users[:200],)):
                convs.setdefault(row["user_id"], []).append(row["id"])
        picks = [(u, c) for u, cs in convs.items() for c in cs]
        queries = [" ".join(rng.choice(WORDS, 6)) for _ in range(n)]
        search = MemorySearch(app.pool, app.embedder, SearchOptions.from_settings(settings))
        assembler = assembler_for(app)
        pick = lambda i: picks[(i * 7919) % len(picks)]  # noqa: E731
        for i in range(10):  # warm up: embedder session, pool, caches
            assembler.get_working_context(*pick(i), queries[i], 2000)
        out = {
            "search_conversation": timed(lambda i: search.search(pick(i)[0], queries[i], pick(i)[1], limit=10), n),
            "search_user": timed(lambda i: search.search(pick(i)[0], queries[i], None, limit=10), n),
            "get_working_context_2000": timed(lambda i: assembler.get_working_context(*pick(i), queries[i], 2000), n),
        }
        vecs = app.embedder.embed(queries[:n])
        with app.pool.connection() as conn:
            if conn.execute("select to_regclass('memctx.messages_embedding_hnsw') is null as missing").fetchone()["missing"]:
                return out  # the HNSW build was skipped or interrupted: no global search to time
            conn.execute("set hnsw.ef_search = 40")

            def global_top10(i):
                conn.execute(QUERIES["search_global_dense"], {"query_vec": vecs[i], "k_dense": 10}).fetchall()

            out["global_hnsw_top10"] = timed(global_top10, n)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--per-conversation", type=int, default=100)
    parser.add_argument("--conversations-per-user", type=int, default=10)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--database", default="memctx_scale")
    parser.add_argument("--reuse", action="store_true",
                        help="measure an already loaded database (e.g. after an interrupted HNSW build)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    per, convs = args.per_conversation, args.conversations_per_user
    users = max(1, args.messages // (per * convs))
    settings = Settings()
    admin_url = db.database_url(settings)
    embedder = LocalMiniLM()
    started = time.perf_counter()
    if args.reuse:
        url = make_conninfo(admin_url, dbname=args.database)
        loaded = {"users": [uuid.UUID(int=i + 1) for i in range(users)]}
        prepare_database(Settings(database_url=url), url, embedder)  # migrations added since the load
        with psycopg.connect(url, autocommit=True) as conn:
            t = time.perf_counter()
            conn.execute("vacuum analyze memctx.messages")
            loaded["vacuum_analyze_s"] = round(time.perf_counter() - t, 1)
            size = conn.execute("select pg_database_size(current_database()), "
                                "pg_total_relation_size('memctx.messages')").fetchone()
            loaded.update(database_bytes=size[0], messages_table_bytes=size[1])
    else:
        url = create_database(admin_url, args.database, embedder)
        loaded = load(url, users, convs, per, log)
    log("measuring")
    results = measure(url, loaded.pop("users"), args.queries, np.random.default_rng(1))
    report = {"messages": users * convs * per, "users": users, "conversations": users * convs,
              "messages_per_conversation": per, **loaded, "latency": results,
              "machine": f"{platform.machine()}, {__import__('os').cpu_count()} CPUs, Python {platform.python_version()}",
              "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "total_s": round(time.perf_counter() - started, 1)}
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for key, value in report.items():
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
