"""Prometheus metrics of the background work: summaries, boards, the outbox, failures.

Owns: the metric objects, in one registry of their own (so importing memctx twice in a test run
never registers a metric twice), and starting the /metrics HTTP endpoint. Library modules record
into these; only the worker entry point serves them.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

REGISTRY = CollectorRegistry(auto_describe=True)

SUMMARIES_GENERATED = Counter(
    "memctx_summaries_generated_total", "Summaries written, by kind (level1, level2, ..., master_new, master_merge).",
    ["kind", "summarizer"], registry=REGISTRY)
SUMMARY_DURATION = Histogram(
    "memctx_summary_generation_duration_seconds", "Time to write one summary, summarizer call and transaction.",
    ["summarizer"], registry=REGISTRY,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
SUMMARY_TOKENS = Histogram(
    "memctx_summary_token_count", "Tokens of each summary written.", registry=REGISTRY,
    buckets=(16, 32, 64, 100, 150, 200, 300, 500, 1000))
BOARD_UPDATES = Counter("memctx_board_updates_total", "Summary board updates written.", registry=REGISTRY)
BOARD_DURATION = Histogram("memctx_board_update_duration_seconds", "Time to update one board.", registry=REGISTRY,
                           buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
MESSAGES_EMBEDDED = Counter("memctx_worker_messages_embedded_total",
                            "Messages the worker embedded because they arrived without an embedding.",
                            registry=REGISTRY)
SUMMARIES_BACKFILLED = Counter("memctx_summaries_backfilled_total",
                               "Superseded summaries embedded after their catch-up, by the backfill.",
                               registry=REGISTRY)
SUMMARIES_UNEMBEDDED = Gauge("memctx_summaries_unembedded", "Summaries without an embedding yet (the backfill's backlog).",
                             registry=REGISTRY)
LONGTERM_WRITTEN = Counter("memctx_conversation_summaries_written_total",
                           "Long-term conversation summaries written (idle or closed).", registry=REGISTRY)
OUTBOX_BACKLOG = Gauge("memctx_outbox_backlog", "Outbox rows not processed yet.", registry=REGISTRY)
OUTBOX_OLDEST_AGE = Gauge("memctx_outbox_oldest_pending_seconds", "Age of the oldest unprocessed outbox row.",
                          registry=REGISTRY)
JOBS_DISPATCHED = Counter("memctx_jobs_dispatched_total", "Conversation jobs sent to the queue.", ["kind"],
                          registry=REGISTRY)
FAILURES = Counter("memctx_worker_failures_total",
                   "Failures, by kind (summarize, board, embed, job, dispatch, longterm, backfill, user_index).",
                   ["kind"], registry=REGISTRY)
PROFILE_LEARNED = Counter("memctx_profile_items_learned_total",
                          "Profile candidates merged, by what became of them (new, seen, replaced, overridden, "
                          "known, suppressed).", ["outcome"], registry=REGISTRY)
USER_INDEXES = Counter("memctx_user_indexes_total",
                       "Heavy users' own HNSW indexes the worker built or dropped, by change (built, dropped).",
                       ["change"], registry=REGISTRY)

# External search (memctx/web): recorded by the API and CLI processes that assemble contexts.
SEARCH_DECISIONS = Counter("memctx_search_decisions_total",
                           "External search decisions, by outcome (search, skip) and what decided (keyword, memory, slm).",
                           ["decision", "by"], registry=REGISTRY)
SEARCH_FAILURES = Counter("memctx_search_failures_total",
                          "External search failures, by stage (engine: every engine failed; fetch: one page; cache).",
                          ["stage"], registry=REGISTRY)
SEARCH_CACHE = Counter("memctx_search_cache_total", "External search cache lookups, by result (hit, miss).",
                       ["result"], registry=REGISTRY)
SEARCH_DURATION = Histogram("memctx_search_duration_seconds",
                            "Time an external search added to a context: engines, fetches and cache.", registry=REGISTRY,
                            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))


def serve(port: int, addr: str = "0.0.0.0"):
    """Serve /metrics on `port` from a daemon thread; returns the server (`.shutdown()` stops it)."""
    server, _thread = start_http_server(port, addr=addr, registry=REGISTRY)
    return server
