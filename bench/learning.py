"""What the learning layer costs: catch-up throughput with and without learning, and context
latency with and without the profile, each pair alternating in one process.

    MEMCTX_HOME=/tmp/learn-bench python bench/learning.py catch-up --locomo ../shared/bench/locomo/locomo-dev.json [--rounds 5]
    MEMCTX_HOME=/tmp/learn-lme python bench/learning.py context --longmemeval ../shared/bench/longmemeval/longmemeval-s-dev.json.gz [--rounds 3]

`catch-up` stores the LoCoMo dev conversations (embedded) in a throwaway database, then times
rounds of `regenerate` (chain, board and, when on, the profile learned from scratch: the user's
profile is emptied before each such round, untimed), learning off and on in turn: messages per
second and the ratio on / off of the medians. The rounds of a whole catch-up vary by seconds on a
small machine, so it also times what the "on" rounds spend inside `learn_all` and gives the ratio
that time makes against the "off" median.

`context` reads a home where `memctx eval longmemeval` stored the instances (and, with this code,
learned their profiles), and asks each instance's question at --budget tokens in its question
conversation, user scope, at the question's date, with the profile and without it in turn (two
assemblers over one search): p50 / p95 of each and their ratios, and the profiles' storage per
user (`memctx.profile_storage`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from memctx.app import open_app  # noqa: E402
from memctx.assemble.context import ContextAssembler, assembler_for  # noqa: E402
from memctx.config import Settings  # noqa: E402
from memctx.evaluate.longmemeval import instance_user, profile_storage, read_instances  # noqa: E402
from memctx.pipeline import catchup  # noqa: E402
from memctx.store import DEFAULT_USER  # noqa: E402
from memctx.store.ingest import ingest, load_file  # noqa: E402
from scratch import scratch_database  # noqa: E402

FORGET_PROFILE = """
delete from memctx.profile_items where user_id = %(user)s;
delete from memctx.procedures where user_id = %(user)s;
delete from memctx.profile_progress where user_id = %(user)s;
"""


def catch_up_ab(path: Path, rounds: int) -> None:
    conversations = load_file(path, "locomo")
    messages = sum(len(c.messages) for c in conversations)
    with scratch_database("learning") as settings, open_app(settings) as app:
        ids = [r.conversation_id for r in ingest(app.store, conversations, DEFAULT_USER)]
        for cid in ids:
            catchup.catch_up(app, DEFAULT_USER, cid)
        off = dataclasses.replace(app, settings=app.settings.model_copy(update={"learning_enabled": False}))
        times: dict[str, list[float]] = {"off": [], "on": []}
        learning: list[float] = []  # seconds inside learn_all in each "on" round
        spent = 0.0
        learn_all = catchup.learn_all

        def timed_learn_all(*args, **kwargs):
            nonlocal spent
            started = time.perf_counter()
            try:
                return learn_all(*args, **kwargs)
            finally:
                spent += time.perf_counter() - started

        catchup.learn_all = timed_learn_all
        for n in range(rounds):
            for arm in (("off", "on") if n % 2 == 0 else ("on", "off")):
                spent = 0.0
                if arm == "on":
                    with app.pool.connection() as conn:
                        for statement in FORGET_PROFILE.strip().split(";\n"):
                            conn.execute(statement.strip().rstrip(";"), {"user": DEFAULT_USER})
                started = time.perf_counter()
                for cid in ids:
                    catchup.regenerate(app if arm == "on" else off, DEFAULT_USER, cid)
                times[arm].append(time.perf_counter() - started)
                if arm == "on":
                    learning.append(spent)
                print(f"round {n} {arm}: {times[arm][-1]:.2f} s"
                      + (f" (learning {learning[-1]:.2f} s)" if arm == "on" else ""), file=sys.stderr)
        catchup.learn_all = learn_all
        with app.pool.connection() as conn:
            items = conn.execute("select count(*) as n from memctx.profile_items").fetchone()["n"]
    med = {arm: statistics.median(v) for arm, v in times.items()}
    print(f"catch-up of {len(ids)} conversations, {messages} messages, median of {rounds} rounds each, alternating:")
    for arm in ("off", "on"):
        print(f"  learning {arm}: {med[arm]:.2f} s ({messages / med[arm]:.0f} messages/s; rounds "
              f"{', '.join(f'{t:.2f}' for t in times[arm])})")
    learned = statistics.median(learning)
    print(f"  throughput on / off: {med['off'] / med['on']:.3f}x; profile items learned: {items}")
    print(f"  inside learning: {learned:.2f} s a round (rounds {', '.join(f'{t:.2f}' for t in learning)}); "
          f"off / (off + learning): {med['off'] / (med['off'] + learned):.3f}x")
    print(f"  load average: {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")


def context_ab(path: Path, budget: int, rounds: int) -> None:
    instances = read_instances(path)
    with open_app(Settings(), auto_migrate=True) as app:
        base = assembler_for(app)
        with_profile = ContextAssembler(base.pool, base.counter, base.search, replace(base.options, scope="user"),
                                        profile=base.profile)
        without = ContextAssembler(base.pool, base.counter, base.search, replace(base.options, scope="user"))
        asked = []
        for instance in instances:
            user = instance_user(instance.question_id)
            try:
                conv = app.store.find_conversation(user, f"{instance.question_id}/question")
            except Exception:
                continue  # not stored in this home
            asked.append((user, conv.id, instance))
        times: dict[str, list[float]] = {"off": [], "on": []}
        for n in range(rounds):
            for i, (user, conv, instance) in enumerate(asked):
                arms = (("off", without), ("on", with_profile))
                for arm, assembler in (arms if (n + i) % 2 == 0 else arms[::-1]):
                    started = time.perf_counter()
                    assembler.get_working_context(user, conv, instance.question, budget, now=instance.question_date)
                    times[arm].append((time.perf_counter() - started) * 1000)
        storage = profile_storage(app, [u for u, _, _ in asked])
    stats = {arm: (float(np.percentile(v, 50)), float(np.percentile(v, 95))) for arm, v in times.items()}
    print(f"get_working_context at {budget} tokens, user scope, {len(asked)} LongMemEval questions x {rounds} rounds, "
          f"alternating per call:")
    for arm in ("off", "on"):
        print(f"  profile {arm}: p50 {stats[arm][0]:.1f} ms, p95 {stats[arm][1]:.1f} ms")
    print(f"  on / off: p50 {stats['on'][0] / stats['off'][0]:.3f}x, p95 {stats['on'][1] / stats['off'][1]:.3f}x")
    print(f"  profile storage per user: {storage}")
    print(f"  load average: {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("catch-up")
    up.add_argument("--locomo", type=Path, required=True)
    up.add_argument("--rounds", type=int, default=5)
    ctx = sub.add_parser("context")
    ctx.add_argument("--longmemeval", type=Path, required=True)
    ctx.add_argument("--budget", type=int, default=2000)
    ctx.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.command == "catch-up":
        catch_up_ab(args.locomo, args.rounds)
    else:
        context_ab(args.longmemeval, args.budget, args.rounds)


if __name__ == "__main__":
    main()
