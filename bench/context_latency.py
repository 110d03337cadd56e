"""get_working_context latency at 2,000 tokens on a database `memctx eval locomo` filled.

Asks every fourth LoCoMo question of the file in its own conversation (10 warm-up calls first)
and prints p50 / p95. To compare two commits, run it from a worktree of each against the same
MEMCTX_HOME, alternating:

    MEMCTX_HOME=/tmp/eval-home python bench/context_latency.py ../shared/bench/locomo/locomo-dev.json
    (cd /tmp/wt-old && MEMCTX_HOME=/tmp/eval-home PYTHONPATH=. python bench/context_latency.py ...)

With --replay it times the call's own CPU, without the database and the search: each call's
current rows and memories are read once (while the contexts at 1k / 2k / 4k are built for a
digest: equal digests, the same contexts), then every call is asked 8 times with them (the
search already done), so what is timed is fitting the current context, filling the memory
section and saying each thing once.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from concurrent.futures import Future

import numpy as np

import memctx
from memctx.app import open_app
from memctx.assemble import assembler_for
from memctx.config import Settings


def main(path: str, replay: bool = False) -> None:
    questions = [(c["sample_id"], q["question"]) for c in json.load(open(path)) for q in c["qa"]][::4]
    with open_app(Settings(context_scope="conversation")) as app:  # LoCoMo's single conversations
        with app.pool.connection() as conn:
            convs = {r["external_id"]: (r["user_id"], r["id"])
                     for r in conn.execute("select external_id, user_id, id from memctx.conversations")}
        assembler = assembler_for(app)
        picks = [(convs[sample], question) for sample, question in questions if sample in convs]
        digest = ""
        if replay:
            digest = f", contexts {_replayed(assembler, picks)}"
        for (user, conv), question in picks[:10]:
            assembler.get_working_context(user, conv, question, 2000)
        times = []
        for (user, conv), question in picks * (8 if replay else 1):
            started = time.perf_counter()
            assembler.get_working_context(user, conv, question, 2000)
            times.append((time.perf_counter() - started) * 1000)
    print(f"{memctx.__file__}: {len(times)} calls, p50 {np.percentile(times, 50):.2f} ms, "
          f"p95 {np.percentile(times, 95):.2f} ms{digest}")


def _replayed(assembler, picks) -> str:
    """Serve each call's current rows and memories from their first reading on (the search
    future already done); a digest of the contexts at 1k / 2k / 4k."""
    rows, searched = {}, {}
    read_rows, start_search = assembler._current_rows, assembler._start_search

    def replay_rows(user, conversation, recent, *, history_tokens=0):
        key = (user, conversation, recent, history_tokens)
        if key not in rows:
            rows[key] = read_rows(user, conversation, recent, history_tokens=history_tokens)
        return rows[key]

    def replay_search(user, conversation, ask, opts, share, search_options, now):
        key = (user, conversation, ask["content"], share)
        if key not in searched:
            searched[key] = start_search(user, conversation, ask, opts, share, search_options, now).result()
        done: Future = Future()
        done.set_result(searched[key])
        return done

    assembler._current_rows, assembler._start_search = replay_rows, replay_search
    digest = hashlib.sha256()
    for budget in (1000, 2000, 4000):
        for (user, conv), question in picks:
            wc = assembler.get_working_context(user, conv, question, budget)
            digest.update(json.dumps([wc.messages, [str(s) for s in wc.sources], wc.tokens]).encode())
    return digest.hexdigest()[:16]


if __name__ == "__main__":
    main(sys.argv[1], replay="--replay" in sys.argv[2:])
