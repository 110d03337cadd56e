"""`memctx eval longmemeval` end to end, as a user runs it, on a small file in LongMemEval's format
that the test writes (never the benchmark data)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

from memctx.evaluate.longmemeval import instance_user

FILLER = ("Here is a longer answer that goes through the options one by one, with the pros and cons of each, "
          "a few caveats about cost and timing, and a suggestion to compare reviews before deciding. ") * 6


def _session(user_text: str, *, evidence: bool = False, reply: str = FILLER) -> list[dict]:
    first = {"role": "user", "content": user_text}
    if evidence:
        first["has_answer"] = True
    return [first, {"role": "assistant", "content": reply}]


def _instance(qid: str, qtype: str, question: str, answer: str, evidence_texts: list[str]) -> dict:
    topics = ["the best hiking boots for wet trails", "a recipe for sourdough with whole wheat flour",
              "how to repot a fiddle leaf fig", "tips for learning the ukulele chords", "cheap flights to Lisbon",
              "setting up a home network with two routers", "a budget for a kitchen renovation",
              "how to train a puppy to walk on a leash"]
    sessions = [_session(f"Can you help me with {t}?") for t in topics]
    ids = [f"{qid}_s{i}" for i in range(len(sessions))]
    dates = [f"2023/05/{10 + i:02d} (Wed) 1{i}:00" for i in range(len(sessions))]
    answer_ids = []
    for j, text in enumerate(evidence_texts):
        sessions.append(_session(text, evidence=True))
        ids.append(f"answer_{qid}_{j}")
        dates.append(f"2023/05/{20 + j:02d} (Sat) 09:30")
        answer_ids.append(f"answer_{qid}_{j}")
    return {"question_id": qid, "question_type": qtype, "question": question, "answer": answer,
            "question_date": "2023/06/01 (Thu) 10:00", "haystack_session_ids": ids, "haystack_dates": dates,
            "haystack_sessions": sessions, "answer_session_ids": answer_ids}


def _write(tmp_path, gz: bool = True):
    data = [
        _instance("q-user", "single-session-user", "What breed is my new dog?", "corgi",
                  ["I just adopted a corgi named Biscuit and I need advice on his first vet visit."]),
        _instance("q-multi", "multi-session", "How many concerts did I go to this spring?", "2",
                  ["I went to a jazz concert at the Blue Note last weekend and loved the saxophonist.",
                   "Last night I saw an indie rock concert downtown, my second concert this spring."]),
    ]
    path = tmp_path / ("lme.json.gz" if gz else "lme.json")
    raw = json.dumps(data).encode()
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return path


def _run(args, settings, tmp_path):
    env = {**os.environ, "MEMCTX_DATABASE_URL": settings.database_url, "MEMCTX_HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-m", "memctx", *args], env=env, capture_output=True, text=True,
                          timeout=600)


def test_eval_longmemeval_json_plot_and_rerun(app, settings, tmp_path):
    path = _write(tmp_path)
    plot = tmp_path / "recall.png"
    done = _run(["eval", "longmemeval", str(path), "--budgets", "600,2000", "--json", "--plot", str(plot)],
                settings, tmp_path)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert results["questions_total"] == 2 and results["scope"] == "user"
    for budget, r in results["budgets"].items():
        assert r["evidence_gold"] == 3 and r["mean_tokens"] <= int(budget)
        assert set(r["baselines"]) == {"bm25", "dense", "rrf"}
        assert set(r["by_type"]) == {"single-session-user", "multi-session"}
        assert r["evidence_found"] == sum(t["evidence_found"] for t in r["by_type"].values())
        assert r["p95_ms"] >= r["p50_ms"] > 0
        assert r["answer_questions"] == 2  # both answers are short
        assert r["evidence_cited"] >= r["evidence_found"]  # a turn found whole is a source too
        assert r["evidence_quoted"] >= r["evidence_found"]
        assert r["repeated_sentences"] == 0 < r["sentences"]
    # the assistant's replies (~230 tokens) are long enough to be cut into passages
    passages = results["passages"]  # per instance: 9 and 10 sessions, one long reply each
    assert passages["messages"] == 9.5 and passages["rows"] >= 2 * passages["messages"]
    assert passages["mb"] > 0 and results["prepare_s"]["mean"] > 0
    # every history fits 2,000 tokens whole: the baselines find every evidence turn, and so must memctx
    big = results["budgets"]["2000"]
    assert big["baselines"]["rrf"]["evidence_recall"] == 1.0
    assert big["evidence_recall"] == 1.0 and big["session_recall"] == 1.0 and big["answer_containment"] == 1.0
    # "corgi" is said in the history; "2" (concerts) is worked out, never said as such
    assert results["answer_containment_ceiling"] == 0.5
    assert results["budgets"]["600"]["baselines"]["rrf"]["mean_tokens"] <= 600
    assert plot.exists() and plot.stat().st_size > 1000

    # Each session is a closed conversation of the instance's user, with its date; one more to ask in.
    owner = instance_user("q-multi")
    convs = app.store.list_conversations(owner, limit=100)
    sessions = [c for c in convs if c.external_id != "q-multi/question"]
    assert len(sessions) == 10 and all(c.closed_at is not None for c in sessions)
    said = {m.text: m.created_at for c in sessions for m in app.store.list_messages(owner, c.id)}
    assert said["Last night I saw an indie rock concert downtown, my second concert this spring."].day == 21

    # A re-run stores nothing new and scores the same.
    with app.pool.connection() as conn:
        before = conn.execute("select count(*) as n, max(updated_at) as t from memctx.conversation_summaries").fetchone()
    again = _run(["eval", "longmemeval", str(path), "--budgets", "600,2000", "--json"], settings, tmp_path)
    assert again.returncode == 0, again.stderr
    rerun = json.loads(again.stdout)
    with app.pool.connection() as conn:
        after = conn.execute("select count(*) as n, max(updated_at) as t from memctx.conversation_summaries").fetchone()
    assert after == before
    assert rerun["turns"] == results["turns"] and rerun["passages"] == results["passages"]
    assert rerun["budgets"]["2000"]["evidence_found"] == big["evidence_found"]


def test_eval_longmemeval_limit_table_and_bad_file(settings, tmp_path):
    path = _write(tmp_path, gz=False)
    done = _run(["eval", "longmemeval", str(path), "--budgets", "1000", "--limit", "1"], settings, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "LongMemEval" in done.stdout and "rrf" in done.stdout
    assert "single-session-user" in done.stdout and "multi-session" not in done.stdout  # only the first
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"question_id": "x", "question": "?"}]))
    refused = _run(["eval", "longmemeval", str(bad)], settings, tmp_path)
    assert refused.returncode == 2 and "nothing was stored" in refused.stderr
