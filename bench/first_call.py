"""A scope's first user-wide get_working_context in a fresh process, against the calls after it.

Each process caches per scope what a search reads once (the scope's speaker names, its size for
the plan), so a user's first call in a process pays for it. On a `bench/scale.py --shape
realistic` database this opens an App, loads its embedder (as `memctx serve` does at start-up),
warms the process with five conversation-scope calls of an ordinary user, then asks three
user-wide questions at 2,000 tokens for each user given (by default the heavy user and the
ordinary users nearest 16,000 and 3,000 messages), and prints the three times per user. Run it
several times: only a fresh process has a first call.

    MEMCTX_HOME=/tmp/scale-home python bench/first_call.py --database memctx_1m --json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path

from psycopg.conninfo import make_conninfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import realistic  # noqa: E402
from memctx import db  # noqa: E402
from memctx.app import open_app  # noqa: E402
from memctx.assemble.context import assembler_for  # noqa: E402
from memctx.config import Settings  # noqa: E402

SIZES = (16_000, 3_000)  # the ordinary users timed by default: those nearest these sizes


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="memctx_scale")
    parser.add_argument("--users", nargs="*", type=uuid.UUID, help="default: the heavy user and two ordinary users")
    parser.add_argument("--source", type=Path, default=Path(__file__).resolve().parent.parent.parent
                        / "shared/bench/locomo/locomo-dev.json", help="LoCoMo JSON the questions come from")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    settings = Settings(database_url=make_conninfo(db.database_url(Settings()), dbname=args.database),
                        pool_min_size=2, pool_max_size=4, context_scope="conversation")  # the warm-up's scope
    queries = realistic.queries(realistic.Source.read(args.source), 20)
    out = {}
    with open_app(settings) as app:
        assembler = assembler_for(app)
        user_scope = replace(assembler.options, scope="user")
        with app.pool.connection() as conn:
            warm = conn.execute("select user_id, id from memctx.conversations where user_id <> %s "
                                "order by md5(id::text) limit 1", (realistic.HEAVY_USER,)).fetchone()
            users = args.users or [realistic.HEAVY_USER] + [conn.execute(
                "select user_id from memctx.conversations where user_id <> %s group by user_id "
                "order by abs(sum(message_count) - %s) limit 1", (realistic.HEAVY_USER, size)).fetchone()["user_id"]
                for size in SIZES]
            picks = [(u, conn.execute("select id, (select sum(message_count) from memctx.conversations where user_id = %s) "
                                      "as size from memctx.conversations where user_id = %s order by message_count desc "
                                      "limit 1", (u, u)).fetchone()) for u in users]
        load = getattr(app.embedder, "load", None)  # as `memctx serve` does at start-up
        if load is not None:
            load()
        for i in range(5):
            assembler.get_working_context(warm["user_id"], warm["id"], queries[i], 2000)
        for n, (user, pick) in enumerate(picks):
            times = []
            for i in range(3):
                started = time.perf_counter()
                assembler.get_working_context(user, pick["id"], queries[5 + 3 * n + i], 2000, options=user_scope)
                times.append(round((time.perf_counter() - started) * 1000, 1))
            out[str(user)] = {"messages": int(pick["size"]), "first_ms": times[0], "then_ms": times[1:]}
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for user, r in out.items():
            print(f"{user} ({r['messages']} messages): first {r['first_ms']} ms, then {r['then_ms']}")
    return out


if __name__ == "__main__":
    main()
