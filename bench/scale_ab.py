"""Two search settings side by side on a `bench/scale.py --shape realistic` database, in one process.

Times get_working_context at 2,000 tokens (user scope and conversation scope) for the heavy user's
long conversation and for 200 ordinary users' conversations (the picks and queries of scale.py),
once with the settings as they are (A) and once with `--set` applied to the memory search's
options (B), alternating A and B call by call in a shuffled order, so that both arms see the
same machine load. Prints p50 / p95 of each arm and B's ratios to A. With `--database-b`, arm B
reads another database of the same server holding the same rows (a copy made with `create
database … template …`, then changed: a migration's backfill, say), with or without `--set`.
`--calls` times only some of the four calls (the user-wide ones, say: heavy_user,ordinary_user).

    MEMCTX_HOME=/tmp/scale-home python bench/scale_ab.py --database memctx_scale_real \\
        --a parallel_workers=None --set parallel_workers=0 --queries 60 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import numpy as np
from psycopg.conninfo import make_conninfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import realistic  # noqa: E402
from memctx import db  # noqa: E402
from memctx.app import open_app  # noqa: E402
from memctx.assemble.context import ContextAssembler, ContextOptions  # noqa: E402
from memctx.config import Settings  # noqa: E402
from memctx.retrieve import MemorySearch, SearchOptions  # noqa: E402


def option(text: str) -> tuple[str, object]:
    """`name=value` of SearchOptions, the value read as JSON (None, null, numbers) or else as text."""
    name, _, value = text.partition("=")
    if name not in SearchOptions.__dataclass_fields__:
        raise argparse.ArgumentTypeError(f"SearchOptions has no field {name!r}")
    try:
        parsed = None if value == "None" else json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    return name, parsed


CALLS = ("heavy_user", "heavy_conversation", "ordinary_user", "ordinary_conversation")


def pct(values: list[float]) -> dict:
    return {"p50_ms": round(float(np.percentile(values, 50)), 1), "p95_ms": round(float(np.percentile(values, 95)), 1),
            "n": len(values)}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, refused with a usage error when `--calls` names a call that does not exist."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="memctx_scale")
    parser.add_argument("--a", type=option, action="append", default=[], help="arm A's SearchOptions name=value")
    parser.add_argument("--set", type=option, action="append", default=[], help="arm B's SearchOptions name=value")
    parser.add_argument("--database-b", help="arm B's database (a copy of --database's rows); default: --database")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--calls", type=lambda text: text.split(","), default=list(CALLS),
                        help=f"the calls timed, comma-separated, of {','.join(CALLS)}; default: all")
    parser.add_argument("--source", type=Path,
                        default=Path(__file__).resolve().parent.parent.parent / "shared/bench/locomo/locomo-dev.json")
    args = parser.parse_args(argv)
    if unknown := set(args.calls) - set(CALLS):
        parser.error(f"unknown calls: {', '.join(sorted(unknown))} (of {', '.join(CALLS)})")
    return args


def main() -> None:
    args = parse_args()
    databases = {"A": args.database, "B": args.database_b or args.database}
    settings = {arm: Settings(database_url=make_conninfo(db.database_url(Settings()), dbname=name), pool_min_size=2,
                              pool_max_size=4, context_scope="conversation")  # the warm-up's scope
                for arm, name in databases.items()}
    with ExitStack() as stack:
        app = stack.enter_context(open_app(settings["A"]))
        apps = {"A": app, "B": app if databases["B"] == databases["A"] else stack.enter_context(open_app(settings["B"]))}
        base = SearchOptions.from_settings(settings["A"])
        arms = {"A": replace(base, **dict(args.a)), "B": replace(base, **{**dict(args.a), **dict(args.set)})}
        assemblers = {k: ContextAssembler(apps[k].pool, app.counter, MemorySearch(apps[k].pool, app.embedder, o),
                                          ContextOptions.from_settings(settings[k])) for k, o in arms.items()}
        queries = realistic.queries(realistic.Source.read(args.source), args.queries)
        with app.pool.connection() as conn:
            heavy = [tuple(conn.execute("select user_id, id from memctx.conversations where user_id = %s "
                                        "order by message_count desc limit 1", (realistic.HEAVY_USER,)).fetchone().values())]
            ordinary = [(r["user_id"], r["id"]) for r in conn.execute(
                "select user_id, id from memctx.conversations where user_id <> %s order by md5(id::text) limit 200",
                (realistic.HEAVY_USER,))]
        calls = {f"{who}_{scope}": (picks, scope) for who, picks in (("heavy", heavy), ("ordinary", ordinary))
                 for scope in ("user", "conversation") if f"{who}_{scope}" in args.calls}
        for assembler in assemblers.values():  # warm up: embedder session, pool, caches
            for i in range(10):
                assembler.get_working_context(*ordinary[i], queries[i % len(queries)], 2000)
        times = {(k, arm): [] for k in calls for arm in arms}
        rng = random.Random(1)
        for _ in range(args.rounds):
            for i, query in enumerate(queries):
                for key, (picks, scope) in calls.items():
                    user, conversation = picks[(i * 7919) % len(picks)]
                    for arm in rng.sample(list(arms), len(arms)):
                        assembler = assemblers[arm]
                        options = replace(assembler.options, scope=scope)
                        t = time.perf_counter()
                        assembler.get_working_context(user, conversation, query, 2000, options=options)
                        times[(key, arm)].append((time.perf_counter() - t) * 1000)
    report = {"a": dict(args.a), "b": dict(args.set), "databases": databases,
              "load_average": [round(x, 2) for x in os.getloadavg()]}
    for key in calls:
        a, b = pct(times[(key, "A")]), pct(times[(key, "B")])
        report[key] = {"A": a, "B": b, "p50_ratio": round(b["p50_ms"] / a["p50_ms"], 2),
                       "p95_ratio": round(b["p95_ms"] / a["p95_ms"], 2)}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
