"""Seq trigger cost: N messages into one conversation in one transaction, in 100-row statements,
with 0001's per-row conversation update (put back in one of two throwaway databases) against migration 0013's
per-statement counters; medians of 3, both in this process.

    python bench/seq_trigger.py
"""

from __future__ import annotations

import re
import statistics
import time
import uuid
from pathlib import Path

import psycopg
from scratch import scratch_database  # bench/ is on the path when run as a script

INIT = Path(__file__).resolve().parent.parent / "migrations" / "0001_init.sql"
INSERT = ("insert into memctx.messages (conversation_id, role, content, text) "
          "select %s, 'user', '[]'::jsonb, 'turn number ' || g from generate_series(1, %s) g")


def insert_ms(url: str, rows: int) -> float:
    """Median of 3: `rows` messages into a new conversation, one transaction, 100 per statement."""
    times = []
    for _ in range(3):
        with psycopg.connect(url) as conn:
            conv = conn.execute("insert into memctx.conversations (user_id) values (%s) returning id",
                                (uuid.uuid4(),)).fetchone()[0]
            started = time.perf_counter()
            for _ in range(rows // 100):
                conn.execute(INSERT, (conv, 100))
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    with scratch_database("seq_old") as old, scratch_database("seq_new") as new:
        compare(old.database_url, new.database_url)


def compare(old_url: str, new_url: str) -> None:
    old_fn = re.search(r"create function memctx.messages_assign_seq\(\).*?\n\$\$;", INIT.read_text(), re.S).group(0)
    with psycopg.connect(old_url, autocommit=True) as conn:
        conn.execute("drop trigger messages_count on memctx.messages")
        conn.execute(old_fn.replace("create function", "create or replace function"))
    for rows in (500, 1000, 2000, 4000):
        old, new = insert_ms(old_url, rows), insert_ms(new_url, rows)
        print(f"{rows} rows, one transaction: 0001 trigger {old:.0f} ms, 0013 {new:.0f} ms, ratio {old / new:.1f}x",
              flush=True)


if __name__ == "__main__":
    main()
