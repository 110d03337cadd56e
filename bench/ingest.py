"""Ingest throughput vs embed-only throughput on the same texts, in one process.

    python bench/ingest.py --locomo ../shared/bench/locomo/locomo-dev.json [--rounds 3] [--record]

Each round embeds every turn once (embed-only sentences/s), then ingests the whole file as a
fresh user (messages/s, embedding + token counting + storing) and forgets that user. Rounds
alternate the two so machine noise hits both; medians and their ratio are reported. With
--record it also prints the result as a row of docs/BENCHMARKS.md's ingest table, to paste in
place of the old one (the page keeps today's figure, not a log).

The CPU ratio beside it (embed-only CPU seconds over ingest's: this process plus the database
backends serving it, read from /proc, so only for a server on this machine) is what the wall
ratio becomes when the cores are saturated either way; on a machine shared with other jobs it
swings less than the wall ratio, which moved by tens of points between rounds there.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from uuid import uuid4

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memctx import db  # noqa: E402
from memctx.app import open_app, prepare_database  # noqa: E402
from memctx.config import Settings  # noqa: E402
from memctx.store.ingest import ingest, load_file  # noqa: E402


def backend_cpu(conn) -> dict[int, float]:
    """CPU seconds so far of each backend on this database (none if the server is elsewhere)."""
    out = {}
    for (pid,) in conn.execute("select pid from pg_stat_activity where datname = current_database() "
                            "and pid <> pg_backend_pid()"):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--record", action="store_true",
                        help="also print the result as a row of docs/BENCHMARKS.md's ingest table")
    args = parser.parse_args()

    settings = Settings()
    prepare_database(settings)
    conversations = load_file(args.locomo, "locomo")
    texts = [m.text for c in conversations for m in c.messages]
    with open_app(settings) as app, psycopg.connect(db.database_url(settings), autocommit=True) as monitor:
        app.embedder.embed(texts[:64])  # load the model outside the timings
        embed_rates, ingest_rates, cpu_ratios = [], [], []
        for round_no in range(args.rounds):
            start, cpu = time.perf_counter(), time.process_time()
            app.embedder.embed(texts)
            embed_rates.append(len(texts) / (time.perf_counter() - start))
            embed_cpu = time.process_time() - cpu
            user, before = uuid4(), backend_cpu(monitor)
            start, cpu = time.perf_counter(), time.process_time()
            results = ingest(app.store, conversations, user)
            ingest_rates.append(sum(r.messages for r in results) / (time.perf_counter() - start))
            ingest_cpu = time.process_time() - cpu + sum(v - before.get(p, 0) for p, v in backend_cpu(monitor).items())
            cpu_ratios.append(embed_cpu / ingest_cpu)
            app.store.forget_user(user)
            print(f"round {round_no + 1}: embed-only {embed_rates[-1]:.0f} sentences/s, ingest "
                  f"{ingest_rates[-1]:.0f} messages/s; CPU s embed-only {embed_cpu:.1f}, ingest {ingest_cpu:.1f}",
                  file=sys.stderr)
    embed_med, ingest_med = statistics.median(embed_rates), statistics.median(ingest_rates)
    line = (f"| {datetime.now(timezone.utc):%Y-%m-%d} | {len(texts)} LoCoMo dev turns, {args.rounds} rounds | "
            f"{embed_med:.0f} sentences/s | {ingest_med:.0f} messages/s | {ingest_med / embed_med:.0%} | "
            f"{statistics.median(cpu_ratios):.1%} |")
    print(f"embed-only median {embed_med:.0f} sentences/s; ingest median {ingest_med:.0f} messages/s; "
          f"ratio {ingest_med / embed_med:.1%}; CPU ratio {statistics.median(cpu_ratios):.1%} "
          f"(load average {os.getloadavg()[0]:.1f}; {platform.processor() or platform.machine()}, "
          f"{len(texts)} turns)")
    if args.record:
        print(line)


if __name__ == "__main__":
    main()
