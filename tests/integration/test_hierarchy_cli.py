"""The worker-layer commands a user runs by hand: summarize, chain, board, edit-summary, close, continuity."""

from __future__ import annotations

import json

from psycopg.types.json import Jsonb
from typer.testing import CliRunner

from memctx.cli import app as cli
from memctx.models import NewMessage
from memctx.store import DEFAULT_USER


def _say(app, conversation_id, n):
    with app.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
        msgs = [NewMessage.build("user" if i % 2 == 0 else "assistant",
                                 f"Turn {i}: Maria told John about her new job at the Boston library.") for i in range(n)]
        cur.executemany("insert into memctx.messages (conversation_id, role, content, text) values (%s, %s, %s, %s)",
                        [(conversation_id, m.role, Jsonb(m.blocks), m.text) for m in msgs])


def test_summarize_chain_board_edit_close_continuity(app, database_url, monkeypatch, tmp_path):
    monkeypatch.setenv("MEMCTX_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMCTX_HOME", str(tmp_path))
    conv = app.store.create_conversation(DEFAULT_USER, title="jobs")
    _say(app, conv.id, 12)
    run = CliRunner().invoke

    out = run(cli, ["summarize", str(conv.id)])
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert result["summaries_written"] == 4 and result["board_updates"] == 3  # 5, 10, then the forced tail
    assert result["backfilled_summaries"] == 3  # "now" leaves no summary without an embedding
    with app.pool.connection() as conn:
        assert conn.execute("select count(*) as n from memctx.summaries where embedding is null").fetchone()["n"] == 0

    out = run(cli, ["chain", str(conv.id), "--json"])
    chain = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(c["level"], c["first_seq"], c["last_seq"]) for c in chain] == \
        [(2, 1, 9), (0, 10, 10), (0, 11, 11), (0, 12, 12)]
    table = run(cli, ["chain", str(conv.id)])
    assert table.exit_code == 0 and "1–9" in table.stdout

    board = json.loads(run(cli, ["board", str(conv.id), "--json"]).stdout)
    assert board["last_seq"] == 12 and "Boston" in json.dumps(board)

    out = run(cli, ["edit-summary", chain[0]["id"], "Maria works at the Boston library since May."])
    assert out.exit_code == 0 and json.loads(out.stdout)["edited"]
    chain2 = [json.loads(line) for line in run(cli, ["chain", str(conv.id), "--json"]).stdout.splitlines()]
    assert chain2[0]["text"] == "Maria works at the Boston library since May." and chain2[0]["edited"]

    closed = json.loads(run(cli, ["close", str(conv.id)]).stdout)
    assert closed["last_seq"] == 12 and closed["summary"]
    note = json.loads(run(cli, ["continuity"]).stdout)
    assert note["conversation_id"] == str(conv.id)
    assert json.loads(run(cli, ["backlog"]).stdout)["pending"] == 12  # no worker ran: rows still pending

    missing = run(cli, ["chain", "00000000-0000-4000-8000-00000000dead"])
    assert missing.exit_code == 2
