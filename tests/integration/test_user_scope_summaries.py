"""Summaries beside turns in user-scope memory (`--scope user`), on locomo-mini."""

from __future__ import annotations

from dataclasses import replace

from memctx.assemble.context import ContextAssembler, ContextOptions
from memctx.evaluate.run import prepare_sessions, run_eval
from memctx.retrieve import MemorySearch, SearchOptions


def _assembler(app, **search):
    options = replace(SearchOptions.from_settings(app.settings), **search)
    return ContextAssembler(app.pool, app.counter, MemorySearch(app.pool, app.embedder, options),
                            ContextOptions.from_settings(app.settings))


def test_summaries_of_closed_conversations_no_longer_crowd_out_the_turns_they_summarize(app, locomo_path):
    # A summary ranks in a list of a few dozen summaries, a turn in one of thousands of turns:
    # at full weight the best summary ties the best turn and takes its room in the budget.
    full = run_eval(app, locomo_path, [1000], scope="user", assembler=_assembler(app, summary_weight=1.0))
    scaled = run_eval(app, locomo_path, [1000], scope="user", assembler=_assembler(app))
    assert SearchOptions().summary_weight < 1.0
    assert scaled["budgets"]["1000"]["evidence_found"] > full["budgets"]["1000"]["evidence_found"]


def test_summaries_still_come_after_the_turns_in_a_new_conversation(app, locomo_path):
    asked, _ = prepare_sessions(app, locomo_path)
    user, conversation = next(iter(asked.values()))
    memories = _assembler(app).search.search(user, "What did Priya research?", None, limit=120)
    kinds = [m.kind for m in memories]
    assert kinds[0] == "message" and {"summary", "conversation_summary"} & set(kinds)
    wc = _assembler(app).get_working_context(user, conversation, "What did Priya research?", 1000,
                                             options=replace(ContextOptions(), scope="user"))
    assert any(s.kind == "message" and s.section == "memories" for s in wc.sources)
