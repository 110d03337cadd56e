"""kill -9 the real worker mid-run, again and again: the chain ends exactly as without crashes.

A LoCoMo dev conversation is fed through the live path — one SQL INSERT per message, as a chat
app would — while `memctx worker` runs as a subprocess against the test database. The worker is
killed with SIGKILL several times (some messages arrive while none runs) and restarted. The final
chain must equal the pure `expected_chain`, and the same messages summarized in one uninterrupted
in-process run must give the very same chain and board, text included.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from psycopg.types.json import Jsonb

from memctx.pipeline import catchup, dispatch
from memctx.pipeline.board import get_board
from memctx.store.ingest import load_file
from memctx.store import DEFAULT_USER
from memctx.summarize.chain import expected_chain
from support import seen_state

USER = DEFAULT_USER
N_MESSAGES = 400
KILL_AT = (60, 150, 230, 320)  # after these many inserts, SIGKILL; restart after a few more
DOWN_FOR = 8  # messages inserted while no worker runs


def _start_worker(database_url: str, home, log):
    env = {**os.environ, "MEMCTX_DATABASE_URL": database_url, "MEMCTX_HOME": str(home),
           "MEMCTX_CLAIM_LEASE_S": "2", "MEMCTX_SWEEP_INTERVAL_S": "1", "MEMCTX_WORKER_THREADS": "2",
           "MEMCTX_POOL_MAX_SIZE": "8"}
    return subprocess.Popen([sys.executable, "-m", "memctx", "worker"], env=env, stdout=log, stderr=subprocess.STDOUT)


def _insert_one(conn, conversation_id, m) -> None:
    conn.execute("insert into memctx.messages (conversation_id, role, content, text, created_at, metadata, external_id) "
                 "values (%s, %s, %s, %s, %s, %s, %s)",
                 (conversation_id, m.role, Jsonb(m.blocks), m.text, m.created_at, Jsonb(m.metadata), m.external_id))
    conn.commit()


def _claimed_not_done(conn) -> int:
    row = conn.execute("select count(*) as n from memctx.outbox where claimed_at is not null and processed_at is null")
    n = row.fetchone()["n"]
    conn.commit()
    return n


def _wait_for_claimed_work(conn, timeout: float = 20.0) -> int:
    """Poll until the worker holds claimed, unfinished outbox rows, so the kill lands mid-work
    whatever the machine's load (a fixed sleep missed it on a busy machine)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = _claimed_not_done(conn)
        if n:
            return n
        time.sleep(0.002)
    return 0


def _state(app, conversation_id):
    return seen_state(app, USER, conversation_id)


def _done(app, conversation_id) -> bool:
    if dispatch.backlog(app).pending:
        return False
    board = get_board(app, USER, conversation_id)
    want = N_MESSAGES - N_MESSAGES % app.settings.board_update_frequency
    return board is not None and board.last_seq == want


@pytest.mark.slow
def test_kill_9_mid_run_gives_the_chain_of_an_uninterrupted_run(app, database_url, locomo_path, tmp_path):
    messages = load_file(locomo_path, "locomo")[0].messages[:N_MESSAGES]
    live = app.store.create_conversation(USER, external_id="live")
    log_path = tmp_path / "worker.log"
    log = open(log_path, "ab")
    worker = _start_worker(database_url, tmp_path, log)
    kills = in_flight = 0
    try:
        with app.pool.connection() as conn:
            for i, m in enumerate(messages, start=1):
                _insert_one(conn, live.id, m)
                if i in KILL_AT:
                    in_flight += _wait_for_claimed_work(conn)
                    worker.send_signal(signal.SIGKILL)
                    worker.wait()
                    kills += 1
                elif i in {k + DOWN_FOR for k in KILL_AT}:
                    worker = _start_worker(database_url, tmp_path, log)
                else:
                    time.sleep(0.01)
        deadline = time.monotonic() + 300
        while not _done(app, live.id):
            assert worker.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, f"worker did not catch up:\n{log_path.read_text()[-3000:]}"
            time.sleep(0.5)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        log.close()
    assert kills == len(KILL_AT)
    assert in_flight > 0, "no kill caught the worker with claimed work: the test proved nothing"

    # The pure rules' chain.
    chain = catchup.live_chain(app, USER, live.id)
    params = catchup.chain_params(app.settings)
    assert [(c.level, c.is_master, c.first_seq, c.last_seq) for c in chain] == \
        [(e.level, e.is_master, e.first_seq, e.last_seq) for e in expected_chain(N_MESSAGES, params)]
    # Every message covered by exactly one live element; no source used by two summaries.
    covered = Counter(seq for c in chain for seq in range(c.first_seq, c.last_seq + 1))
    assert sorted(covered) == list(range(1, N_MESSAGES + 1)) and set(covered.values()) == {1}
    with app.pool.connection() as conn:
        sources = [s for r in conn.execute("select source_ids from memctx.summaries where conversation_id = %s",
                                           (live.id,)) for s in r["source_ids"]]
        unembedded = conn.execute("select count(*) as n from memctx.messages where embedding is null").fetchone()["n"]
    assert len(sources) == len(set(sources))
    assert unembedded == 0

    # An uninterrupted run over the same messages gives the same chain and board, text included.
    calm = app.store.create_conversation(USER, external_id="calm")
    with app.pool.connection() as conn:
        for m in messages:
            _insert_one(conn, calm.id, m)
    catchup.catch_up(app, USER, calm.id)
    assert _state(app, live.id) == _state(app, calm.id)
