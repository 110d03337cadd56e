"""External search benchmark: cleaning throughput, end-to-end latency, decision latency, and how
often LoCoMo's questions (about the conversation) would go to the web.

    .venv/bin/python bench/search.py [--locomo PATH] [--rounds 200] [--budget 2000] [--no-memory]

Everything runs on loopback: the SearXNG-compatible engine and the pages are the tests' own
(tests/web_support.py, tests/fixtures/web/). `--locomo` defaults to tests/fixtures/locomo-mini.json.

`locomo` decides on each question with the whole conversation's text as what is known (keyword
rules only). `locomo_with_memory` asks what the working context really decides: the conversations
are ingested into a throwaway database of the embedded Postgres (dropped afterwards), and each
question goes through `get_working_context` (`--budget` tokens), whose external search is a
recorder taking the decision on the context's real memory search hits and recent turns twice,
with and without the rule "the conversation can answer" (a top memory naming the query's
named things). Nothing is searched. `--no-memory` skips it (no database).
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

from memctx.web import EngineChain, SearchReport, WebSearch  # noqa: E402
from memctx.web.clean import clean_html  # noqa: E402
from memctx.web.decide import decide  # noqa: E402
from memctx.web.engines import SearxngEngine  # noqa: E402
from memctx.web.fetch import Fetcher  # noqa: E402
from memctx.web.types import Decision  # noqa: E402
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


class DecisionRecorder:
    """The context's external search, minus the search: decides on what the context passes (its
    memory hits, recent turns, speakers) with the memory rule, without it, and with no memory
    search at all (only the recent turns known); and, to see the memory rule alone, with nothing of
    the conversation known but its memory hits, and with nothing at all."""

    def __init__(self, threshold: float = 1.0) -> None:
        self.threshold = threshold
        self.decisions: list[tuple[Decision, ...]] = []
        self.queries: list[str] = []

    def external(self, query, *, user, people, known, memories) -> SearchReport:
        with_rule = decide(query, threshold=self.threshold, known=known, people=people, memories=memories)
        without = decide(query, threshold=self.threshold, known=known, people=people)
        # the context's `known` is its recent turns, then the memory texts, joined by newlines
        recent = known[:len(known) - len("\n".join(memories))].rstrip("\n") if memories else known
        no_memory = decide(query, threshold=self.threshold, known=recent, people=people)
        # the memory rule alone: nothing of the conversation known (no speakers, no text) but its hits
        blind_with_rule = decide(query, threshold=self.threshold, memories=memories)
        blind = decide(query, threshold=self.threshold)
        self.decisions.append((with_rule, without, no_memory, blind_with_rule, blind))
        self.queries.append(query)
        return SearchReport(with_rule)


def locomo_with_memory(path: Path, budget: int) -> dict:
    """The share of LoCoMo's questions the working context would send to the web, with real memory
    search over the ingested conversations, with and without the memory rule."""
    from memctx.app import open_app
    from memctx.assemble.context import ContextAssembler, ContextOptions
    from memctx.retrieve.search import MemorySearch, SearchOptions
    from memctx.store.ingest import ingest, load_file
    from scratch import scratch_database

    samples = json.loads(path.read_text())
    recorder = DecisionRecorder()
    with scratch_database("search") as settings, open_app(settings) as app:
        user = uuid.uuid4()
        started = time.perf_counter()
        loaded = ingest(app.store, load_file(path, "locomo"), user)
        ingest_s = time.perf_counter() - started
        search = MemorySearch(app.pool, app.embedder, SearchOptions.from_settings(settings))
        assembler = ContextAssembler(app.pool, app.counter, search, ContextOptions.from_settings(settings),
                                     external=recorder)
        started = time.perf_counter()
        for sample, result in zip(samples, loaded, strict=True):
            for qa in sample["qa"]:
                assembler.get_working_context(user, result.conversation_id, qa["question"], budget)
        contexts_s = time.perf_counter() - started
    asked = len(recorder.decisions)
    rates = [round(sum(d[i].search for d in recorder.decisions) / asked, 4) for i in range(5)]
    return {"dataset": path.name, "questions": asked, "budget": budget, "web_search_rate": rates[0],
            "web_search_rate_without_memory_rule": rates[1], "web_search_rate_without_memory_search": rates[2],
            "kept_off_the_web_by_memory_rule": sum(d[0].by == "memory" for d in recorder.decisions),
            "nothing_known_but_memory_hits": {"web_search_rate": rates[3], "without_memory_rule": rates[4],
                                              "kept_off_by_memory_rule": sum(d[3].by == "memory"
                                                                             for d in recorder.decisions),
                                              "kept_off_examples": [q for q, d in zip(recorder.queries,
                                                                    recorder.decisions) if d[3].by == "memory"][:5]},
            "ingest_s": round(ingest_s, 1), "context_ms_per_question": round(contexts_s / asked * 1000, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=ROOT / "tests" / "fixtures" / "locomo-mini.json")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--budget", type=int, default=2000, help="token budget of the working contexts")
    parser.add_argument("--no-memory", action="store_true", help="skip the run with memory search (no database)")
    args = parser.parse_args()
    counter = get_counter("cl100k_base")
    result = {"cleaning": cleaning(counter, args.rounds), "end_to_end": end_to_end(counter, 50),
              "decision": decisions(), "locomo": locomo(args.locomo)}
    if not args.no_memory:
        result["locomo_with_memory"] = locomo_with_memory(args.locomo, args.budget)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
