"""Turns that fit in the memory section, and its CPU time per call, at 1k / 2k / 4k tokens.

The candidates are the turns of the first LoCoMo dev conversation in 200 seeded random rankings
of 120 (as many as get_working_context considers), so memories come from many sessions.
On a checkout from before the memory section had session headers, it measures the old path.

    PYTHONPATH=. python bench/memory_section.py [PATH]
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from datetime import datetime
from uuid import uuid4

from memctx.assemble.budget import CachedCounter
from memctx.retrieve.types import Fragment, Memory
from memctx.tokens import get_counter

counter = CachedCounter(get_counter())
path = sys.argv[1] if len(sys.argv) > 1 else "../shared/bench/locomo/locomo-dev.json"
conversation = json.load(open(path, encoding="utf-8"))[0]["conversation"]
conv, turns, n = uuid4(), [], 1
while f"session_{n}" in conversation:
    day = datetime.strptime(conversation[f"session_{n}_date_time"].split(" on ")[1], "%d %B, %Y")
    for t in conversation[f"session_{n}"]:
        turns.append(Fragment(uuid4(), conv, "user", t["text"], len(turns) + 1, day, t["dia_id"], t["speaker"],
                              counter.count(t["text"]), n))
    n += 1
try:
    from memctx.assemble.memories import fill_memories

    def fitted(memories: list[Memory], budget: int) -> int:
        return len(fill_memories(memories, set(), budget, counter).sources)
except ImportError:  # a checkout from before the session headers
    from memctx.assemble.context import ContextAssembler

    class _Old:
        pass

    old = _Old()
    old.counter = counter

    def fitted(memories: list[Memory], budget: int) -> int:
        return len(ContextAssembler._memories(old, memories, set(), budget)[1])

rng = random.Random(12)
trials = [[Memory("message", f.id, conv, (f,), 1.0, None) for f in rng.sample(turns, 120)] for _ in range(200)]
for budget in (1000, 2000, 4000):
    counts, ms = [], []
    for memories in trials:
        t0 = time.process_time()
        counts.append(fitted(memories, budget))
        ms.append((time.process_time() - t0) * 1000)
    ms.sort()
    print(f"{budget}: turns {statistics.mean(counts):.1f}, CPU ms p50 {ms[len(ms) // 2]:.2f} p95 {ms[int(len(ms) * .95)]:.2f}")
