"""Where `memctx eval locomo --scope user` loses the gold turns the single conversation finds.

For every question and budget it assembles four contexts on one database: conversation scope as
is (C0); conversation scope with its current context emptied, as a new conversation has it (Cn);
user scope as is (U0); user scope with the summaries left out of the memories (Us). Each gold turn
of categories 1–4 found in C0 and not in U0 is put down to the first arm that loses it. The
database holds both variants (they belong to different users); the first run ingests both.

    MEMCTX_HOME=/tmp/gap PYTHONPATH=. python bench/user_scope_gap.py [PATH] [BUDGETS]
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from uuid import UUID

from memctx.app import open_app
from memctx.assemble.context import ContextAssembler, assembler_for
from memctx.config import Settings
from memctx.evaluate.locomo import POOLED_CATEGORIES, load_questions
from memctx.evaluate.run import prepare, prepare_sessions
from memctx.store import DEFAULT_USER


class MessagesOnly:
    """The assembler's memory search with the summaries taken out of its results."""

    def __init__(self, search):
        self.inner, self.options = search, search.options

    def search(self, *args, **kwargs):
        return [m for m in self.inner.search(*args, **kwargs) if m.kind == "message"]


class EmptyCurrent(ContextAssembler):
    """An assembler that sees the conversation's current context as a new conversation's: empty."""

    def _current_rows(self, user, conversation, recent):
        return [r for r in super()._current_rows(user, conversation, recent) if r["kind"] == "conversation"]


def texts(app, conversation: UUID) -> dict[str, str]:
    """Dia id → text of every turn of one sample's conversation (its sessions hold the same)."""
    return {m.external_id: m.text for m in app.store.list_messages(DEFAULT_USER, conversation) if m.external_id}


def main() -> None:
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/bench/locomo/locomo-dev.json")
    budgets = [int(b) for b in (sys.argv[2] if len(sys.argv) > 2 else "1000,2000,4000").split(",")]
    with open_app(Settings(context_scope="conversation"), auto_migrate=True) as app:  # C0 and Cn: one conversation
        base = assembler_for(app)
        conversations, _ = prepare(app, path, DEFAULT_USER)
        asked, _ = prepare_sessions(app, path)
        user_options = replace(base.options, scope="user")
        arms = {"C0": base, "Cn": EmptyCurrent(base.pool, base.counter, base.search, base.options),
                "U0": ContextAssembler(base.pool, base.counter, base.search, user_options),
                "Us": ContextAssembler(base.pool, base.counter, MessagesOnly(base.search), user_options)}
        stored = {sid: texts(app, cid) for sid, cid in conversations.items()}
        found = {(arm, b): 0 for arm in arms for b in budgets}
        lost = {b: Counter() for b in budgets}
        gold = 0
        for q in load_questions(path):
            turns = stored[q.sample_id]
            evidence = [e for e in q.evidence if e in turns]
            if q.category not in POOLED_CATEGORIES or not evidence:
                continue
            gold += len(evidence)
            user, new = asked[q.sample_id]
            for b in budgets:
                hit = {}
                for name, assembler in arms.items():
                    conv = name.startswith("C")
                    text = assembler.get_working_context(DEFAULT_USER if conv else user,
                                                         conversations[q.sample_id] if conv else new,
                                                         q.question, b).text
                    hit[name] = {e for e in evidence if turns[e] in text}
                    found[(name, b)] += len(hit[name])
                for e in hit["C0"] - hit["U0"]:
                    lost[b]["current context" if e not in hit["Cn"] else
                            "summaries took the room" if e in hit["Us"] else "ranking across conversations"] += 1
                lost[b]["found by U0, not C0"] += len(hit["U0"] - hit["C0"])
    print(f"gold turns of categories 1-4: {gold}")
    for b in budgets:
        print(f"{b}: " + ", ".join(f"{arm} {found[(arm, b)]}" for arm in arms)
              + "; C0 not U0: " + ", ".join(f"{why} {n}" for why, n in sorted(lost[b].items())))


if __name__ == "__main__":
    main()
