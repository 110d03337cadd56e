"""The worker `memctx serve` runs in its own process embeds on one thread (it shares the cores with
the requests), unless MEMCTX_EMBED_THREADS says otherwise; `memctx worker` on its own keeps two."""

from __future__ import annotations

from memctx.api.cli import in_process_worker_settings
from memctx.config import Settings


def test_the_in_process_worker_embeds_on_one_thread_unless_told(monkeypatch):
    monkeypatch.delenv("MEMCTX_EMBED_THREADS", raising=False)
    assert (Settings().embed_threads, in_process_worker_settings(Settings()).embed_threads) == (2, 1)
    monkeypatch.setenv("MEMCTX_EMBED_THREADS", "2")
    assert in_process_worker_settings(Settings()).embed_threads == 2
    monkeypatch.setenv("MEMCTX_EMBED_THREADS", "3")
    told = Settings()
    assert in_process_worker_settings(told) is told
