"""External search benchmark: cleaning throughput, end-to-end latency, decision latency, and how
often LoCoMo's questions (about the conversation) would go to the web.

    .venv/bin/python bench/search.py [--locomo PATH] [--rounds 200]

Everything runs on loopback: the SearXNG-compatible engine and the pages are the tests' own
(tests/web_support.py, tests/fixtures/web/). `--locomo` defaults to tests/fixtures/locomo-mini.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the loopback web of the tests

from memctx.search import EngineChain, WebSearch  # noqa: E402
from memctx.search.clean import clean_html  # noqa: E402
from memctx.search.decide import decide  # noqa: E402
from memctx.search.engines import SearxngEngine  # noqa: E402
from memctx.search.fetch import Fetcher  # noqa: E402
from memctx.search.types import Decision  # noqa: E402
from memctx.tokens import get_counter  # noqa: E402
from web_support import WEB, LoopbackWeb  # noqa: E402

QUERIES = ["What is the latest version of PostgreSQL?", "Who is Sam Altman?", "thanks, that helps",
           "What did Caroline research?", "Is Python 3.14 out?", "Can you rewrite this paragraph more formally?",
           "What's the weather today in Lisbon?", "Tell me about Acme Widgets Inc.", "What is your favourite colour?",
           "When did Melanie paint a sunrise?"]


def cleaning(counter, rounds: int) -> dict:
    pages = [(p.name, p.read_text()) for p in sorted(WEB.glob("*.html"))]
    size = sum(len(html.encode()) for _, html in pages)
    started = time.perf_counter()
    for _ in range(rounds):
        for name, html in pages:
            clean_html(html, name, counter, 300)
    elapsed = time.perf_counter() - started
    return {"pages": len(pages), "bytes": size, "mb_per_s": round(size * rounds / elapsed / 1e6, 2)}


def end_to_end(counter, rounds: int) -> dict:
    web = LoopbackWeb()
    try:
        search = WebSearch(EngineChain([SearxngEngine(web.base + "/searxng")]), Fetcher(allow_private=True),
                           counter)
        yes = Decision(True, "bench", "keyword")
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            report = search.run("postgres 18 release", yes, user=uuid.uuid4())
            times.append((time.perf_counter() - t0) * 1000)
            assert len(report.results) == 3
    finally:
        web.close()
    times.sort()
    return {"results": 3, "p50_ms": round(statistics.median(times), 2), "p95_ms": round(times[int(len(times) * .95)], 2)}


def decisions(n: int = 1000) -> dict:
    started = time.perf_counter()
    for i in range(n):
        decide(QUERIES[i % len(QUERIES)], threshold=1.0, people=("Caroline", "Melanie"))
    elapsed = time.perf_counter() - started
    return {"queries": n, "total_ms": round(elapsed * 1000, 2), "us_per_query": round(elapsed / n * 1e6, 1)}


def locomo(path: Path) -> dict:
    samples = json.loads(path.read_text())
    asked = yes = yes_blind = 0
    fired: dict[str, int] = {}
    for sample in samples:
        conv = sample["conversation"]
        people = (conv["speaker_a"], conv["speaker_b"])
        known = "\n".join(t["text"] for k, v in conv.items() if k.startswith("session_") and isinstance(v, list)
                          for t in v)
        for qa in sample["qa"]:
            asked += 1
            decision = decide(qa["question"], threshold=1.0, known=known, people=people)
            yes += decision.search
            yes_blind += decide(qa["question"], threshold=1.0).search  # without the conversation
            if decision.search:
                for rule in decision.rules:
                    key = rule.split(" ")[0]
                    fired[key] = fired.get(key, 0) + 1
    return {"dataset": path.name, "questions": asked, "web_search_rate": round(yes / asked, 4),
            "web_search_rate_without_conversation": round(yes_blind / asked, 4), "rules_of_the_yes": fired}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=ROOT / "tests" / "fixtures" / "locomo-mini.json")
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    counter = get_counter("cl100k_base")
    print(json.dumps({"cleaning": cleaning(counter, args.rounds), "end_to_end": end_to_end(counter, 50),
                      "decision": decisions(), "locomo": locomo(args.locomo)}, indent=2))


if __name__ == "__main__":
    main()
