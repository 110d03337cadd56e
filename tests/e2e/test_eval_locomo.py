"""`memctx eval locomo` and `memctx context` end to end, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memctx.store import DEFAULT_USER


def _run(args, settings, tmp_path):
    env = {**os.environ, "MEMCTX_DATABASE_URL": settings.database_url, "MEMCTX_HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-m", "memctx", *args], env=env, capture_output=True, text=True,
                          timeout=600)


def _one_conversation(locomo_path, tmp_path):
    """The first dev conversation with only what a memory system may read (never the authors'
    observation or summaries), written to a temporary file — never into the repository."""
    sample = json.loads(locomo_path.read_text())[0]
    path = tmp_path / "locomo-one.json"
    path.write_text(json.dumps([{k: sample[k] for k in ("sample_id", "conversation", "qa")}]))
    return path


@pytest.mark.slow
def test_eval_locomo_json_and_plot(app, settings, locomo_path, tmp_path):
    plot = tmp_path / "recall.png"
    data = _one_conversation(locomo_path, tmp_path)
    done = _run(["eval", "locomo", str(data), "--budgets", "500,1000", "--limit", "25", "--json",
                 "--plot", str(plot)], settings, tmp_path)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert set(results["budgets"]) == {"500", "1000"}
    for budget, r in results["budgets"].items():
        for key in ("evidence_recall", "evidence_found", "evidence_gold", "evidence_recall_question_mean",
                    "evidence_recall_adversarial", "answer_containment", "mean_tokens", "p50_ms", "p95_ms",
                    "questions", "skipped", "baselines", "by_category"):
            assert key in r
        # The headline pools the gold turns of categories 1–4; each category pools its own.
        pooled = [c for name, c in r["by_category"].items() if name != "adversarial"]
        assert r["evidence_gold"] == sum(c["evidence_gold"] for c in pooled) > 0
        assert r["evidence_recall"] == round(sum(c["evidence_found"] for c in pooled) / r["evidence_gold"], 4)
        assert r["questions"] + r["skipped"] == 25
        assert r["mean_tokens"] <= int(budget)
        assert r["repeated_sentences"] == 0 < r["sentences"]  # each sentence of five words or more once
        assert set(r["baselines"]) == {"recency", "dense", "fulltext"}
        assert r["evidence_recall"] > r["baselines"]["recency"]["evidence_recall"]
        # containment is reported against the full history's, the ceiling of what a context can hold
        assert r["answer_containment_ratio"] == round(r["answer_containment"] / results["answer_containment_ceiling"], 4)
    assert 0 < results["answer_containment_ceiling"] < 1
    assert set(results["answer_containment_ceiling_by_category"]) == {"multi-hop", "temporal", "single-hop"}
    assert results["full_history_tokens"]["mean"] > 10_000 and results["conversations"] == 1
    assert plot.exists() and plot.stat().st_size > 1000

    ctx = _run(["context", "mini-1", "--query", "What did Priya research?", "--budget", "800", "--json"],
               settings, tmp_path)
    assert ctx.returncode == 0, ctx.stderr
    wc = json.loads(ctx.stdout)
    assert wc["tokens"] <= 800 and wc["messages"][-1]["content"] == "What did Priya research?"
    assert any(s["external_id"] and s["external_id"].startswith("D") for s in wc["sources"])


def test_eval_refuses_bad_budgets(settings, tmp_path, locomo_path):
    done = _run(["eval", "locomo", str(locomo_path), "--budgets", "abc"], settings, tmp_path)
    assert done.returncode == 2 and "budgets" in done.stderr


def test_cross_conversation_variant_asks_in_a_new_conversation_over_closed_sessions(app, locomo_path):
    from memctx.evaluate.run import run_eval, session_user

    results = run_eval(app, locomo_path, [1000], limit=30, scope="user")
    r = results["budgets"]["1000"]
    assert results["scope"] == "user" and r["baselines"] == {}
    assert r["questions"] + r["skipped"] == 30 and r["evidence_gold"] > 0 and r["evidence_recall"] > 0.15
    for sample in (s["sample_id"] for s in json.loads(locomo_path.read_text())):
        owner = session_user(sample)
        convs = app.store.list_conversations(owner, limit=1000)
        sessions = [c for c in convs if c.external_id.startswith(f"{sample}/session-")]
        asked = [c for c in convs if c.external_id == f"{sample}/questions"]
        assert len(sessions) > 1 and len(asked) == 1 and asked[0].message_count == 0
        with app.pool.connection() as conn:  # every session was closed with its long-term summary
            closed = conn.execute("select count(*) as n from memctx.conversations c join memctx.conversation_summaries s "
                                  "on s.conversation_id = c.id where c.user_id = %s and c.closed_at is not null",
                                  (owner,)).fetchone()["n"]
        assert closed == len(sessions)


def test_full_history_is_every_turn_under_its_session_date_with_its_dates_resolved(app, locomo_path):
    from memctx.evaluate.locomo import contains_answer
    from memctx.evaluate.run import history_text, prepare
    from memctx.summarize.text import format_day

    ids, _ = prepare(app, locomo_path, DEFAULT_USER)
    messages = app.store.list_messages(DEFAULT_USER, ids["mini-1"])
    history = history_text(messages)
    assert all(f"{m.speaker}: {m.text}" in history for m in messages)
    headers = {f"[{format_day(m.created_at)}]" for m in messages}  # one a session (none spans midnight)
    assert history.startswith("[4 March 2023]\n")
    assert sum(line in headers for line in history.splitlines()) == len({m.metadata["session"] for m in messages}) > 1
    # "My landlord messaged yesterday", said on 4 March 2023: the question's answer is the date it meant
    assert contains_answer(history, "3 March 2023")
    assert not contains_answer("\n".join(f"{m.speaker}: {m.text}" for m in messages), "3 March 2023")


def test_prefix_arm_never_costs_more_than_the_history_and_finds_all_where_it_fits(app, locomo_path, tmp_path):
    from memctx.evaluate.prefixes import plot_prefixes, run_prefixes

    results = run_prefixes(app, locomo_path, [500, 4000], [20, 100])
    assert set(results["prefixes"]) == {"20", "100"}
    for n, per in results["prefixes"].items():
        for budget, r in per.items():
            assert r["questions"] > 0 and r["tokens_over_history"] == 0, (n, budget)
            assert all(used <= min(history, int(budget)) for history, used in r["points"])
    fits = results["prefixes"]["20"]["4000"]  # 20 turns fit 80 % of 4,000 tokens: the history verbatim
    assert fits["verbatim"] == fits["questions"] and fits["evidence_recall"] == 1.0
    assert fits["repeated_sentences"] == 0
    # the history verbatim keeps every gold observation of its turns, each in a whole turn
    kept = fits["retention"]
    assert kept["observations"] > 0 and kept["kept_share"] == 1.0 and kept["kept_by_sentence_only"] == 0
    assert kept["kept_per_100_tokens"] == round(100 * kept["kept"] / kept["tokens"], 3)
    # 100 turns at 500 tokens keep fewer of them, and their chain and board keep some on their own
    assert results["prefixes"]["100"]["500"]["retention"]["kept_share"] < 1.0
    chain = results["chain_retention"]["100"]
    assert chain["covered"] > 0 and 0 < chain["kept"] <= chain["covered"] and chain["tokens"] > 0
    assert results["prefixes"]["100"]["500"]["verbatim"] == 0  # 100 turns do not fit 500 tokens
    plot = tmp_path / "prefixes.png"
    plot_prefixes(results, plot)
    assert plot.stat().st_size > 1000


def test_eval_refuses_bad_prefixes(settings, tmp_path, locomo_path):
    done = _run(["eval", "locomo", str(locomo_path), "--prefixes", "20,x"], settings, tmp_path)
    assert done.returncode == 2 and "prefixes" in done.stderr
