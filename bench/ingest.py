"""Ingest throughput vs embed-only throughput on the same texts, in one process.

    python bench/ingest.py --locomo ../shared/bench/locomo/locomo-dev.json [--rounds 3] [--record]

Each round embeds every turn once (embed-only sentences/s), then ingests the whole file as a
fresh user (messages/s, embedding + token counting + storing) and forgets that user. Rounds
alternate the two so machine noise hits both; medians and their ratio are reported. With
--record the result is appended to docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from uuid import uuid4

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memctx.app import open_app, prepare_database  # noqa: E402
from memctx.config import Settings  # noqa: E402
from memctx.store.ingest import ingest, load_file  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--record", action="store_true", help="append the result to docs/BENCHMARKS.md")
    args = parser.parse_args()

    settings = Settings()
    prepare_database(settings)
    conversations = load_file(args.locomo, "locomo")
    texts = [m.text for c in conversations for m in c.messages]
    with open_app(settings) as app:
        app.embedder.embed(texts[:64])  # load the model outside the timings
        embed_rates, ingest_rates = [], []
        for round_no in range(args.rounds):
            start = time.perf_counter()
            app.embedder.embed(texts)
            embed_rates.append(len(texts) / (time.perf_counter() - start))
            user = uuid4()
            start = time.perf_counter()
            results = ingest(app.store, conversations, user)
            ingest_rates.append(sum(r.messages for r in results) / (time.perf_counter() - start))
            app.store.forget_user(user)
            print(f"round {round_no + 1}: embed-only {embed_rates[-1]:.0f} sentences/s, "
                  f"ingest {ingest_rates[-1]:.0f} messages/s", file=sys.stderr)
    embed_med, ingest_med = statistics.median(embed_rates), statistics.median(ingest_rates)
    line = (f"| {datetime.now(timezone.utc):%Y-%m-%d} | {len(texts)} LoCoMo dev turns, {args.rounds} rounds | "
            f"{embed_med:.0f} sentences/s | {ingest_med:.0f} messages/s | {ingest_med / embed_med:.0%} |")
    print(f"embed-only median {embed_med:.0f} sentences/s; ingest median {ingest_med:.0f} messages/s; "
          f"ratio {ingest_med / embed_med:.1%}  ({platform.processor() or platform.machine()}, "
          f"{len(texts)} turns)")
    if args.record:
        print(line)


if __name__ == "__main__":
    main()
