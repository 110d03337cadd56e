"""The local embedders side by side, in one process: embed-only throughput, query latency, ingest.

    python bench/embedders.py --locomo ../shared/bench/locomo/locomo-dev.json \
        [--embedders local,local-e5-small] [--texts 600] [--queries 50] [--words 12] [--rounds 3] [--ingest 1]

Each round, for each embedder in turn (so machine noise hits all of them): embeds the first
`--texts` LoCoMo turns in one call (texts/s), then embeds `--queries` LoCoMo questions of
`--words` words one at a time through `embed_query`, as a search does (ms each), and with
`--ingest N` ingests the first N conversations into a scratch database of that embedder's
space (messages/s; the database is dropped afterwards). Medians over rounds, query p50/p95 over every round's queries, and each
figure's ratio to the first embedder's are printed with the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from uuid import uuid4

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memctx.app import open_app  # noqa: E402
from memctx.config import Settings  # noqa: E402
from memctx.embed import Embedder, embed_query  # noqa: E402
from memctx.evaluate.locomo import load_questions  # noqa: E402
from memctx.providers import make_embedder  # noqa: E402
from memctx.store.ingest import ingest, load_file  # noqa: E402
from scratch import scratch_database  # noqa: E402


def ingest_rate(kind: str, embedder: Embedder, conversations) -> float:
    """Messages/s of ingesting `conversations` into a fresh database of the embedder's space."""
    with scratch_database("embedders", embedder=kind) as settings, open_app(settings, embedder=embedder) as app:
        start = time.perf_counter()
        results = ingest(app.store, conversations, uuid4())
        return sum(r.messages for r in results) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--embedders", default="local,local-e5-small", help="MEMCTX_EMBEDDER values, baseline first")
    parser.add_argument("--texts", type=int, default=600, help="turns embedded per round (embed-only)")
    parser.add_argument("--queries", type=int, default=50, help="questions embedded one at a time per round")
    parser.add_argument("--words", type=int, default=12, help="words per question embedded (0: any)")
    parser.add_argument("--ingest", type=int, default=0, help="conversations ingested per round (0: none)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    conversations = load_file(args.locomo, "locomo")
    texts = [m.text for c in conversations for m in c.messages][:args.texts]
    queries = [q.question for q in load_questions(args.locomo)
               if not args.words or len(q.question.split()) == args.words][:args.queries]
    kinds = args.embedders.split(",")
    embedders = {kind: make_embedder(Settings(embedder=kind)) for kind in kinds}
    for embedder in embedders.values():
        embedder.embed(texts[:16])  # load the model outside the timings
        embed_query(embedder, queries[0])
    rates: dict[str, list[float]] = {k: [] for k in kinds}
    latencies: dict[str, list[float]] = {k: [] for k in kinds}
    ingests: dict[str, list[float]] = {k: [] for k in kinds}
    for round_no in range(args.rounds):
        for kind, embedder in embedders.items():
            start = time.perf_counter()
            embedder.embed(texts)
            rates[kind].append(len(texts) / (time.perf_counter() - start))
            for query in queries:
                start = time.perf_counter()
                embed_query(embedder, query)
                latencies[kind].append((time.perf_counter() - start) * 1000)
            if args.ingest:
                ingests[kind].append(ingest_rate(kind, embedder, conversations[:args.ingest]))
            print(f"round {round_no + 1} {kind}: {rates[kind][-1]:.0f} texts/s, query p50 "
                  f"{statistics.median(latencies[kind][-len(queries):]):.1f} ms"
                  + (f", ingest {ingests[kind][-1]:.0f} messages/s" if args.ingest else "")
                  + f" (load {os.getloadavg()[0]:.1f})", file=sys.stderr)

    words = statistics.mean(len(q.split()) for q in queries)
    print(f"{len(texts)} LoCoMo turns, {len(queries)} questions ({words:.1f} words on average), "
          f"{args.rounds} rounds; load average {os.getloadavg()[0]:.1f}")
    base = kinds[0]
    for kind, embedder in embedders.items():
        rate, p50, p95 = statistics.median(rates[kind]), *np.percentile(latencies[kind], [50, 95])
        line = (f"{embedder.name}: embed-only {rate:.0f} texts/s (x{rate / statistics.median(rates[base]):.2f}), "
                f"query p50 {p50:.1f} ms (x{p50 / np.percentile(latencies[base], 50):.2f}), p95 {p95:.1f} ms")
        if args.ingest:
            ing = statistics.median(ingests[kind])
            line += f", ingest {ing:.0f} messages/s (x{ing / statistics.median(ingests[base]):.2f})"
        print(line)


if __name__ == "__main__":
    main()
