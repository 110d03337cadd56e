"""A conversation's long-term summary is never longer than the live chain it summarizes."""

from __future__ import annotations

from memctx import providers
from memctx.pipeline import longterm
from memctx.pipeline.catchup import live_chain
from memctx.store import DEFAULT_USER
from support import Verbose, say_by_sql

USER = DEFAULT_USER
BAKERY = ["You are a concise assistant for a small bakery's inventory.",
          "We have 40 kg flour, 12 kg butter and 300 eggs in stock.",
          "Noted: 40 kg flour, 12 kg butter, 300 eggs.",
          "Each batch of croissants uses 2 kg flour, 1.2 kg butter and 10 eggs. How many batches can we make?",
          "Butter limits you: 12 kg / 1.2 kg = 10 batches, using 20 kg flour and 100 eggs.",
          "Order more butter from Laticínios Serra on Wednesday — we need at least 10 kg.",
          "I'll add it to the action list: order 10 kg of butter from Laticínios Serra on Wednesday."]


def _closed_against_chain(app, summarizer=None):
    conv = app.store.create_conversation(USER, title="bakery")
    say_by_sql(app, conv.id, BAKERY, first="assistant")
    summary = longterm.close_conversation(app, USER, conv.id, summarizer)
    return summary, sum(c.token_count for c in live_chain(app, USER, conv.id))


def test_a_short_conversation_summary_is_at_most_half_its_live_chain(app):
    summary, chain_tokens = _closed_against_chain(app)
    assert summary.summary and "butter" in summary.summary
    assert summary.token_count == app.counter.count(summary.summary)
    assert summary.token_count <= chain_tokens // 2, (summary.token_count, chain_tokens)


def test_a_summarizer_that_overshoots_is_cut_to_under_the_live_chain(app):
    summary, chain_tokens = _closed_against_chain(app, Verbose(providers.make_summarizer(app.settings, app.counter)))
    assert summary.summary.startswith(BAKERY[0][:40])
    assert summary.token_count == app.counter.count(summary.summary)
    assert summary.token_count <= chain_tokens // 2, (summary.token_count, chain_tokens)
