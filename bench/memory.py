"""Worker memory: max RSS of embedding LoCoMo texts, and of one in-process catch-up.

    python bench/memory.py embed [--max-batch-tokens 4096]
    MEMCTX_HOME=/tmp/memctx-bench python bench/memory.py catch-up [--summary-embeddings all|live] \
        [--conversation 3] [--max-batch-tokens 4096] --locomo ../shared/bench/locomo/locomo-dev.json

Run one measure per process: max RSS (`resource.getrusage`) never goes down. `embed` embeds 2000
dev messages, then ~430 summary-sized texts (consecutive messages joined to ~150 words), and
prints texts/s and RSS after each; `--max-batch-tokens 1000000000` gives the uncapped batches of
64 the embedder used before. `catch-up` ingests one dev conversation into a fresh database (dropped
at the end), catches it up, then backfills its superseded summaries, printing RSS after each.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memctx.pipeline import catchup, embedding  # noqa: E402
from memctx.app import open_app  # noqa: E402
from memctx.embed import LocalMiniLM  # noqa: E402
from memctx.store.ingest import ingest, load_file  # noqa: E402
from memctx.store import DEFAULT_USER  # noqa: E402
from scratch import scratch_database  # noqa: E402


def rss() -> str:
    current = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS"))
    return f"rss {current / 1024:.0f} MB, max {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"


def embed(args, conversations) -> None:
    messages = [m.text for c in conversations for m in c.messages]
    longs, cur = [], []
    for text in messages:
        cur.append(text)
        if sum(len(x.split()) for x in cur) > 150:
            longs.append(" ".join(cur))
            cur = []
    embedder = LocalMiniLM(max_batch_tokens=args.max_batch_tokens)
    embedder.embed(["warm up"])
    print(f"max_batch_tokens={args.max_batch_tokens} warm: {rss()}")
    for name, texts in (("messages", messages[:2000]), ("summary-sized", longs[:300]), ("summary-sized", longs[300:])):
        start = time.perf_counter()
        embedder.embed(texts)
        print(f"  {name}: {len(texts)} texts, {len(texts) / (time.perf_counter() - start):.1f}/s, {rss()}")


def catch_up(args, conversations) -> None:
    conv = conversations[args.conversation]
    with scratch_database("memory", summary_embeddings=args.summary_embeddings) as settings, \
            open_app(settings, embedder=LocalMiniLM(max_batch_tokens=args.max_batch_tokens)) as app:
        app.embedder.embed(["warm up"])
        print(f"summary_embeddings={args.summary_embeddings} max_batch_tokens={args.max_batch_tokens} "
              f"warm: {rss()}")
        cid = ingest(app.store, [conv], DEFAULT_USER)[0].conversation_id
        print(f"  ingest {conv.external_id} ({len(conv.messages)} messages): {rss()}")
        start = time.perf_counter()
        result = catchup.catch_up(app, DEFAULT_USER, cid)
        print(f"  catch_up: {time.perf_counter() - start:.1f} s, {result.summaries_written} summaries written, "
              f"{result.embedded_summaries} embedded: {rss()}")
        start = time.perf_counter()
        n = embedding.backfill_conversation(app, DEFAULT_USER, cid)
        print(f"  backfill: {n} summaries in {time.perf_counter() - start:.1f} s: {rss()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("measure", choices=["embed", "catch-up"])
    parser.add_argument("--locomo", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "bench" /
                        "locomo" / "locomo-dev.json")
    parser.add_argument("--max-batch-tokens", type=int, default=4096)
    parser.add_argument("--summary-embeddings", choices=["all", "live"], default="all")
    parser.add_argument("--conversation", type=int, default=3, help="index in the dev split (3 = conv-42)")
    args = parser.parse_args()
    conversations = load_file(args.locomo, "locomo")
    (embed if args.measure == "embed" else catch_up)(args, conversations)


if __name__ == "__main__":
    main()
