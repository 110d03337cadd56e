"""The common case: LoCoMo conversations cut to their first N turns. No LLM.

Owns: `run_prefixes` — each sample's first N turns stored as a conversation of its own (reused
when stored), brought up to date as the worker would, and asked only the questions whose every
evidence turn lies inside it. Per prefix length and budget it reports the pooled evidence recall
of categories 1–4, the tokens used against the prefix's full history (system prompt, every turn
as a chat message, the query: what a client without memctx sends), the contexts that cost more
than that history (the target is none), those sent verbatim, and the share of sentences of five
words or more said twice in one context, overall and over the contexts that were not the history
verbatim (a history may repeat itself; a compressed context still quotes two turns whole when
both say "Your kind words mean a lot."), and the gold observations kept per 100 context tokens
(memctx.evaluate.retention). Per prefix length it also scores the live summary chain and board
alone. `plot_prefixes` draws tokens used against history.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence
from uuid import UUID

from memctx.tokens import message_tokens, messages_tokens
from memctx.assemble.context import ContextAssembler, assembler_for
from memctx.assemble.render import chat_turn
from memctx.assemble.repeats import sentence_tally
from memctx.evaluate.run import mean_of
from memctx.evaluate.locomo import POOLED_CATEGORIES, Question, evidence_found, load_questions
from memctx.evaluate.retention import Gold, RetentionTally, load_observations
from memctx.evaluate.run import chain_retention
from memctx.pipeline.catchup import catch_up
from memctx.store import DEFAULT_USER
from memctx.store.ingest import ConversationInput, ingest, load_file

PREFIXES = (20, 50, 100, 200)


@dataclass
class _PrefixTally:
    found: int = 0
    gold: int = 0
    used: list[int] = field(default_factory=list)
    history: list[int] = field(default_factory=list)
    repeated: int = 0
    sentences: int = 0
    verbatim: int = 0
    repeated_compressed: int = 0  # the same, over the contexts that were not the history verbatim
    sentences_compressed: int = 0
    retention: RetentionTally = field(default_factory=RetentionTally)

    def summary(self) -> dict[str, Any]:
        over = sum(u > h for u, h in zip(self.used, self.history))
        return {"questions": len(self.used), "evidence_recall": round(self.found / self.gold, 4) if self.gold else None,
                "evidence_found": self.found, "evidence_gold": self.gold,
                "mean_tokens": mean_of(self.used, digits=1), "mean_history_tokens": mean_of(self.history, digits=1),
                "tokens_over_history": over, "verbatim": self.verbatim,
                "repeated_sentences": self.repeated, "sentences": self.sentences,
                "repeated_share": round(self.repeated / self.sentences, 4) if self.sentences else None,
                "repeated_share_compressed": round(self.repeated_compressed / self.sentences_compressed, 4)
                if self.sentences_compressed else None,
                "retention": self.retention.summary(),
                "points": [[h, u] for h, u in zip(self.history, self.used)]}


def prepare_prefixes(app: Any, path: Path, user: UUID, prefixes: Sequence[int]
                     ) -> dict[tuple[str, int], tuple[UUID, frozenset[str]]]:
    """Store each sample's first N turns (N in `prefixes`, when it has more) as its own conversation
    and summarize it; (sample_id, N) → (conversation id, the dialogue ids of its turns)."""
    out: dict[tuple[str, int], tuple[UUID, frozenset[str]]] = {}
    samples = load_file(path, "locomo")
    cut = [ConversationInput(external_id=f"{s.external_id}/first-{n}", title=s.title, metadata=s.metadata,
                             messages=s.messages[:n], records=s.records[:n])
           for s in samples for n in prefixes if n < len(s.messages)]
    stored = {r.external_id: r.conversation_id for r in ingest(app.store, cut, user)}
    for conv in cut:
        catch_up(app, user, stored[conv.external_id])
        sample, n = conv.external_id.rsplit("/first-", 1)
        out[(sample, int(n))] = (stored[conv.external_id], frozenset(m.external_id for m in conv.messages))
    return out


def run_prefixes(app: Any, path: Path, budgets: Sequence[int], prefixes: Sequence[int] = PREFIXES, *,
                 user: UUID = DEFAULT_USER, assembler: ContextAssembler | None = None, limit: int | None = None,
                 progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Score get_working_context on conversation prefixes: {prefix: {budget: summary}}."""
    assembler = assembler or assembler_for(app)
    # Each prefix is a conversation of its own, and what it is measured against is its own history:
    # asked in conversation scope (in user scope the longer prefixes, copies of the same turns,
    # would bring the turns said after it), at the moment its last turn was said.
    options = replace(assembler.options, scope="conversation")
    convs = prepare_prefixes(app, path, user, prefixes)
    questions = load_questions(path)[:limit] if limit else load_questions(path)
    system = {"role": "system", "content": assembler.options.system_prompt}
    tallies = {(n, b): _PrefixTally() for n in prefixes for b in budgets}
    observations = load_observations(path)
    for (sample, n), (cid, ids) in sorted(convs.items()):
        history = app.store.list_messages(user, cid)
        texts = {m.external_id: m.text for m in history if m.external_id}
        gold = Gold.of(observations.get(sample, []), texts)
        turns = sum(message_tokens(app.counter, t["role"], t["content"]) for t in (chat_turn(m.role, m.text)
                                                                                  for m in history))
        asked = [q for q in questions if q.sample_id == sample and q.evidence and set(q.evidence) <= ids]
        moment = history[-1].created_at if history else None
        for q in asked:
            full = turns + messages_tokens(app.counter, [system, {"role": "user", "content": q.question}])
            for budget in budgets:
                wc = assembler.get_working_context(user, cid, q.question, budget, options=options, now=moment)
                _add(tallies[(n, budget)], q, wc.messages, wc.tokens, full, texts)
                tallies[(n, budget)].retention.add(gold, wc.text, wc.tokens)
        if progress:
            progress(len(asked))
    chains = {n: chain_retention(app, observations, {s: c for (s, m), (c, _) in convs.items() if m == n},
                                 {c: user for c, _ in convs.values()}) for n in prefixes}
    return {"dataset": str(path), "prefixes": {str(n): {str(b): tallies[(n, b)].summary() for b in budgets}
                                               for n in prefixes},
            "chain_retention": {str(n): chains[n] for n in prefixes}}


def _add(tally: _PrefixTally, q: Question, messages: Sequence[Mapping[str, str]], tokens: int, full: int,
         texts: Mapping[str, str]) -> None:
    tally.used.append(tokens)
    tally.history.append(full)
    repeated, said = sentence_tally(messages)
    tally.verbatim += tokens == full
    tally.repeated += repeated
    tally.sentences += said
    if tokens != full:
        tally.repeated_compressed += repeated
        tally.sentences_compressed += said
    found = evidence_found("\n".join(m["content"] for m in messages), q.evidence, texts)
    if found is not None and q.category in POOLED_CATEGORIES:
        tally.found, tally.gold = tally.found + found[0], tally.gold + found[1]


def plot_prefixes(results: Mapping[str, Any], path: Path) -> None:
    """Tokens used against the prefix's full-history tokens, one colour per budget, with the
    line a context must stay under."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.5), dpi=120)
    top = 0
    budgets = sorted({b for per in results["prefixes"].values() for b in per}, key=int)
    for budget in budgets:
        points = [p for per in results["prefixes"].values() for p in per.get(budget, {}).get("points", [])]
        if points:
            xs, ys = zip(*points)
            top = max(top, *xs)
            ax.scatter(xs, ys, s=8, alpha=0.5, label=f"budget {budget}")
    ax.plot([0, top], [0, top], color="black", linewidth=1, label="the full history")
    ax.set_xlabel("full history + system prompt + query (tokens)")
    ax.set_ylabel("working context (tokens)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title("LoCoMo prefixes of " + ", ".join(results["prefixes"]) + " turns")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
