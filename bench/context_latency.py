"""get_working_context latency at 2,000 tokens on a database `memctx eval locomo` filled.

Asks every fourth LoCoMo question of the file in its own conversation (10 warm-up calls first)
and prints p50 / p95. To compare two commits, run it from a worktree of each against the same
MEMCTX_HOME, alternating:

    MEMCTX_HOME=/tmp/eval-home python bench/context_latency.py ../shared/bench/locomo/locomo-dev.json
    (cd /tmp/wt-old && MEMCTX_HOME=/tmp/eval-home PYTHONPATH=. python bench/context_latency.py ...)
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

import memctx
from memctx.app import open_app
from memctx.assemble import assembler_for
from memctx.config import Settings


def main(path: str) -> None:
    questions = [(c["sample_id"], q["question"]) for c in json.load(open(path)) for q in c["qa"]][::4]
    with open_app(Settings()) as app:
        with app.pool.connection() as conn:
            convs = {r["external_id"]: (r["user_id"], r["id"])
                     for r in conn.execute("select external_id, user_id, id from memctx.conversations")}
        assembler = assembler_for(app)
        picks = [(convs[sample], question) for sample, question in questions if sample in convs]
        for (user, conv), question in picks[:10]:
            assembler.get_working_context(user, conv, question, 2000)
        times = []
        for (user, conv), question in picks:
            started = time.perf_counter()
            assembler.get_working_context(user, conv, question, 2000)
            times.append((time.perf_counter() - started) * 1000)
    print(f"{memctx.__file__}: {len(times)} calls, p50 {np.percentile(times, 50):.1f} ms, "
          f"p95 {np.percentile(times, 95):.1f} ms")


if __name__ == "__main__":
    main(sys.argv[1])
