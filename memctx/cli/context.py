"""CLI commands of the context layer, registered on the main `memctx` app by memctx.cli.

`memctx context CONV --query TEXT --budget N [--json]` prints a WorkingContext;
`memctx search QUERY [--conversation CONV]` prints memories;
`memctx eval locomo PATH [--budgets 1000,2000,4000] [--json] [--plot FILE] [--door D]` scores it on
LoCoMo, through the door D (python, http, proxy, mcp: memctx.evaluate.doors);
`memctx eval longmemeval PATH [...the same options]` on LongMemEval (memctx.evaluate.longmemeval);
`memctx eval board PATH [--json]` scores the summary board (memctx.cli.pipeline); `memctx eval
profile PATH [--json]` the learned profile (memctx.evaluate.profile).
JSON goes to stdout; progress and errors go to stderr.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from memctx.cli.common import BAD_INPUT, CONVERSATION_HELP, USER_HELP, conversation_id, err, fail, user_id
from memctx.cli.pipeline import eval_board_cmd

DOOR_HELP = ("ask through this door: python (the call in process), http (a `memctx serve` on loopback, with a key), "
             "proxy (its OpenAI-compatible proxy, scored on what a loopback upstream receives), mcp (its MCP tools "
             "through the official client over streamable HTTP)")


def context_cmd(conversation: str = typer.Argument(..., help=CONVERSATION_HELP),
                query: str = typer.Option(..., "--query", "-q", help="the user's new message"),
                budget: int = typer.Option(2000, "--budget", "-b", min=1, help="token budget of the whole context"),
                user: Optional[str] = typer.Option(None, help=USER_HELP),
                status_quo: bool = typer.Option(False, "--status-quo", help="the last N raw messages instead"),
                scope: Optional[str] = typer.Option(None, help="memories from all of the user's conversations (user) "
                                                               "or this one's (conversation); default "
                                                               "MEMCTX_CONTEXT_SCOPE"),
                as_of: Optional[datetime] = typer.Option(None, "--as-of", help="ask at this moment (default: now)"),
                as_json: bool = typer.Option(False, "--json", help="print the WorkingContext as JSON")) -> None:
    """Assemble the working context for a new message within a token budget."""
    from memctx.app import open_app
    from memctx.assemble import BudgetTooSmall, get_working_context
    from memctx.config import Settings
    from memctx.store import UnknownConversation

    if scope not in (None, "conversation", "user"):
        fail("--scope is conversation or user", BAD_INPUT)
    owner = user_id(user)
    with open_app(Settings()) as memctx_app:
        conv = conversation_id(memctx_app, owner, conversation)
        try:
            wc = get_working_context(memctx_app, conv, query, budget, user=owner, status_quo=status_quo or None,
                                     scope=scope, now=as_of)
        except (UnknownConversation, BudgetTooSmall) as exc:
            fail(str(exc), BAD_INPUT)
    if as_json:
        print(json.dumps(wc.as_json(), ensure_ascii=False))
        return
    for message in wc.messages:
        print(f"--- {message['role']}\n{message['content']}")
    err.print(f"{wc.tokens}/{wc.budget} tokens; " + ", ".join(f"{s.name} {s.tokens}" for s in wc.sections),
              highlight=False)


def search_cmd(query: str = typer.Argument(..., help="what to look for"),
               conversation: Optional[str] = typer.Option(None, "--conversation", "-c", help=CONVERSATION_HELP),
               limit: int = typer.Option(10, min=1), threshold: Optional[float] = typer.Option(None),
               user: Optional[str] = typer.Option(None, help=USER_HELP),
               as_of: Optional[datetime] = typer.Option(None, "--as-of", help="ask at this moment (default: now)")
               ) -> None:
    """Memory search; prints one JSON line per memory, best first."""
    from memctx.app import open_app
    from memctx.config import Settings
    from memctx.retrieve import search_memories

    owner = user_id(user)
    with open_app(Settings()) as memctx_app:
        conv = conversation_id(memctx_app, owner, conversation) if conversation else None
        for memory in search_memories(memctx_app, owner, query, conv, limit=limit, threshold=threshold, now=as_of):
            print(json.dumps(memory.as_json(), ensure_ascii=False))


def eval_locomo_cmd(path: Path = typer.Argument(..., exists=True, dir_okay=False, help="a LoCoMo JSON file"),
                    budgets: str = typer.Option("1000,2000,4000", help="comma-separated token budgets"),
                    as_json: bool = typer.Option(False, "--json", help="print the full results as JSON"),
                    plot: Optional[Path] = typer.Option(None, help="write recall against budget to this image"),
                    limit: Optional[int] = typer.Option(None, min=1, help="only the first N questions"),
                    user: Optional[str] = typer.Option(None, help=USER_HELP),
                    scope: str = typer.Option("conversation", help="conversation: each sample one conversation; "
                                              "user: each session its own closed conversation, questions asked "
                                              "in a new one with user-scope memory"),
                    prefixes: Optional[str] = typer.Option(
                        None, help="also score conversation prefixes of these many turns (e.g. 20,50,100,200), "
                                   "each asked the questions whose evidence lies inside it"),
                    door: str = typer.Option("python", help=DOOR_HELP)) -> None:
    """Score get_working_context on a LoCoMo file (no LLM): evidence recall, answer containment,
    tokens and latency, beside the recency, dense-only and full-text-only baselines."""
    from memctx.app import open_app
    from memctx.assemble import assembler_for
    from memctx.config import Settings
    from memctx.evaluate.doors import open_door
    from memctx.evaluate.locomo import load_questions
    from memctx.evaluate.run import run_eval

    sizes = _budgets(budgets)
    _check_door(door)
    if scope not in ("conversation", "user"):
        fail("--scope is conversation or user", BAD_INPUT)
    try:
        cuts = sorted({int(n) for n in prefixes.split(",") if n.strip()}) if prefixes else []
    except ValueError:
        fail(f"--prefixes {prefixes!r} must be comma-separated integers", BAD_INPUT)
    if prefixes and (not cuts or min(cuts) <= 0):
        fail("--prefixes needs at least one positive number of turns", BAD_INPUT)
    owner = user_id(user)
    total = len(load_questions(path)[:limit] if limit else load_questions(path))
    with open_app(Settings(), auto_migrate=True) as memctx_app, Progress(
            TextColumn("evaluating"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            console=err, transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task("eval", total=total * (2 if scope == "conversation" else 1))  # + baselines' pass
        with open_door(door, memctx_app, assembler_for(memctx_app), sizes) as asking:
            results = run_eval(memctx_app, path, sizes, user=owner, limit=limit, scope=scope, door=asking,
                               progress=lambda n: progress.advance(task, n))
        if cuts:
            from memctx.evaluate.prefixes import run_prefixes

            results["prefix_arm"] = run_prefixes(memctx_app, path, sizes, cuts, user=owner, limit=limit)
    if plot:
        from memctx.evaluate.plot import plot_recall

        plot_recall(results, plot)
        err.print(f"plot written to {escape(str(plot))}", highlight=False)
        if cuts:
            from memctx.evaluate.prefixes import plot_prefixes

            tokens_plot = plot.with_name(f"{plot.stem}-prefixes{plot.suffix}")
            plot_prefixes(results["prefix_arm"], tokens_plot)
            err.print(f"plot written to {escape(str(tokens_plot))}", highlight=False)
    if as_json:
        print(json.dumps(results, ensure_ascii=False))
    else:
        _print_table(results)
        if cuts:
            _print_prefixes(results["prefix_arm"])


def _print_prefixes(results: dict) -> None:
    table = Table(title="LoCoMo prefixes: questions whose evidence lies in the first N turns")
    table.caption = ("evidence recall: gold turns of categories 1–4, pooled; history: the prefix's full history "
                     "with system prompt and query; over: contexts costing more than it; repeated: sentences of "
                     "five words or more said twice in one context; kept /100 tok: gold observations the context "
                     "keeps per 100 of its tokens")
    for column in ("turns", "budget", "questions", "evidence recall", "mean tokens", "mean history", "over",
                   "verbatim", "repeated", "repeated (compressed)", "kept /100 tok"):
        table.add_column(column)
    for n, per in results["prefixes"].items():
        for budget, r in per.items():
            table.add_row(n, budget, str(r["questions"]), _fmt(r["evidence_recall"]), f"{r['mean_tokens'] or 0:.0f}",
                          f"{r['mean_history_tokens'] or 0:.0f}", str(r["tokens_over_history"]), str(r["verbatim"]),
                          _fmt(r["repeated_share"]), _fmt(r["repeated_share_compressed"]),
                          _per_100(r["retention"]))
    Console().print(table)
    _print_chains(results["chain_retention"])


def _print_chains(chains: dict) -> None:
    """The live summary chain and board alone: gold observations kept, of those they cover."""
    table = Table(title="Live summary chain + board alone: gold observations kept")
    for column in ("conversations", "kept / covered", "tokens", "kept /100 tok"):
        table.add_column(column)
    for name, r in chains.items():
        table.add_row(name, f"{r['kept']} / {r['covered']} ({_fmt(r['kept_share'])})", str(r["tokens"]),
                      _per_100(r))
    Console().print(table)


def _per_100(retention: dict) -> str:
    value = retention.get("kept_per_100_tokens")
    return "–" if value is None else f"{value:.2f}"


def _check_door(door: str) -> None:
    from memctx.evaluate.doors import DOORS

    if door not in DOORS:
        fail(f"--door is one of {', '.join(DOORS)}", BAD_INPUT)


def _budgets(budgets: str) -> list[int]:
    try:
        sizes = sorted({int(b) for b in budgets.split(",") if b.strip()})
    except ValueError:
        fail(f"--budgets {budgets!r} must be comma-separated integers", BAD_INPUT)
    if not sizes or min(sizes) <= 0:
        fail("--budgets needs at least one positive budget", BAD_INPUT)
    return sizes


def eval_longmemeval_cmd(path: Path = typer.Argument(..., exists=True, dir_okay=False,
                                                     help="a LongMemEval JSON file (plain or .gz)"),
                         budgets: str = typer.Option("1000,2000,4000", help="comma-separated token budgets"),
                         as_json: bool = typer.Option(False, "--json", help="print the full results as JSON"),
                         plot: Optional[Path] = typer.Option(None, help="write recall against budget to this image"),
                         limit: Optional[int] = typer.Option(None, min=1, help="only the first N instances"),
                         door: str = typer.Option("python", help=DOOR_HELP)) -> None:
    """Score the working context on a LongMemEval file (no LLM).

    Each instance's sessions are stored as closed conversations of one user, and the question is
    asked in a new one at its date with user scope: evidence turns found whole in the context,
    session recall, answer containment, tokens and latency, by question type, beside plain BM25,
    dense and RRF over whole turns. A re-run reuses what is stored."""
    from memctx.app import open_app
    from memctx.assemble import assembler_for
    from memctx.config import Settings
    from memctx.evaluate.doors import open_door
    from memctx.evaluate.longmemeval import read_instances, run_longmemeval
    from memctx.models import InvalidInput

    sizes = _budgets(budgets)
    _check_door(door)
    try:
        total = len(read_instances(path)[:limit] if limit else read_instances(path))
    except InvalidInput as exc:
        fail(f"nothing was stored: {exc}", BAD_INPUT)
    with open_app(Settings(), auto_migrate=True) as memctx_app, Progress(
            TextColumn("storing + evaluating"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            console=err, transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task("eval", total=total)
        with open_door(door, memctx_app, assembler_for(memctx_app), sizes) as asking:
            results = run_longmemeval(memctx_app, path, sizes, limit=limit, door=asking,
                                      progress=lambda n: progress.advance(task, n))
    if plot:
        from memctx.evaluate.plot import plot_recall

        plot_recall(results, plot, title="LongMemEval evidence recall, pooled ({questions} questions)",
                    ylabel="evidence turns found whole (%)")
        err.print(f"plot written to {escape(str(plot))}", highlight=False)
    if as_json:
        print(json.dumps(results, ensure_ascii=False))
    else:
        _print_longmemeval(results)


def _print_longmemeval(results: dict) -> None:
    out = Console()
    table = Table(title=f"LongMemEval {escape(str(results['dataset']))} — {results['questions_total']} questions, "
                        f"user scope, full history ≈ {results['full_history_tokens']['mean'] or 0:.0f} tokens")
    table.caption = ("evidence recall: has_answer turns found whole / all, pooled; session recall: answer sessions "
                     "with an evidence turn found; answer containment: answers of at most five words, the whole "
                     f"history's {_fmt(results['answer_containment_ceiling'])}")
    for column in ("budget", "arm", "evidence recall", "session recall", "answer containment", "mean tokens",
                   "p50 ms", "p95 ms"):
        table.add_column(column)
    for budget, r in results["budgets"].items():
        for arm, v in [("memctx", r), *r["baselines"].items()]:
            table.add_row(budget, arm, _fmt(v["evidence_recall"]), _fmt(v["session_recall"]),
                          _fmt(v["answer_containment"]), f"{v['mean_tokens']:.0f}", str(v.get("p50_ms", "")),
                          str(v.get("p95_ms", "")))
    out.print(table)
    types = Table(title="evidence recall by question type: memctx (RRF)")
    types.add_column("type")
    for budget in results["budgets"]:
        types.add_column(budget)
    names = next(iter(results["budgets"].values()))["by_type"]
    for name in names:
        types.add_row(name, *(f"{_fmt(r['by_type'][name]['evidence_recall'])} "
                              f"({_fmt(r['by_type'][name]['baselines']['rrf']['evidence_recall'])})"
                              for r in results["budgets"].values()))
    out.print(types)


def eval_profile_cmd(path: Path = typer.Argument(..., exists=True, dir_okay=False, help="a LoCoMo JSON file"),
                     as_json: bool = typer.Option(False, "--json", help="print the full results as JSON")) -> None:
    """Score the learned profile on LoCoMo's gold observations (no database, no LLM).

    Each conversation is learned as the worker learns it; then, per speaker: the share of items
    with a source turn that is the evidence of one of their gold observations (precision), and the
    observations covered, in total and per 100 profile tokens."""
    from memctx.config import Settings
    from memctx.evaluate.profile import run_profile_eval
    from memctx.tokens import get_counter

    results = run_profile_eval(path, get_counter(Settings().token_encoding))
    if as_json:
        print(json.dumps(results, ensure_ascii=False))
        return
    table = Table(title=f"profile on {escape(str(path))} ({results['learner']})")
    for column in ("part", "items", "precision", "precision, all items", "observations covered", "per 100 tokens"):
        table.add_column(column)
    for name, r in [("all", results), *results["halves"].items()]:
        table.add_row(name, str(r["items"]), _fmt(r["precision"]), _fmt(r["precision_all"]),
                      f"{r['covered']} / {r['observations']}", str(r["covered_per_100_tokens"]))
    Console().print(table)


def _print_table(results: dict) -> None:
    out = Console()
    history = results["full_history_tokens"]["mean"]
    table = Table(title=f"LoCoMo {escape(str(results['dataset']))} — {results['questions_total']} questions, "
                        f"{results['scope']} scope" + (f", full history ≈ {history:.0f} tokens" if history else ""))
    table.caption = ("evidence recall: gold turns of categories 1–4 found / all, pooled; "
                     "per question: the mean over questions of every category; adversarial: category 5's; "
                     "answer containment: categories 1, 2, 4, in brackets its share of the full history's "
                     f"({_fmt(results['answer_containment_ceiling'])}); kept /100 tok: gold observations the "
                     "context keeps per 100 of its tokens")
    for column in ("budget", "arm", "evidence recall", "per question", "adversarial", "answer containment",
                   "mean tokens", "p50 ms", "p95 ms", "kept /100 tok"):
        table.add_column(column)
    for budget, r in results["budgets"].items():
        rows = [("memctx", r), *r["baselines"].items()]
        for arm, v in rows:
            table.add_row(budget, arm, _fmt(v["evidence_recall"]), _fmt(v["evidence_recall_question_mean"]),
                          _fmt(v["evidence_recall_adversarial"]),
                          f"{_fmt(v['answer_containment'])} ({_fmt(v['answer_containment_ratio'])})",
                          f"{v['mean_tokens']:.0f}", str(v.get("p50_ms", "")), str(v.get("p95_ms", "")),
                          _per_100(v["retention"]))
    out.print(table)
    if results.get("chain_retention"):
        _print_chains({"all": results["chain_retention"]})


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def register(app: typer.Typer) -> None:
    """Add this layer's commands to the main app."""
    app.command("context")(context_cmd)
    app.command("search")(search_cmd)
    eval_app = typer.Typer(help="Evaluate memctx on benchmarks (no LLM).", no_args_is_help=True, rich_markup_mode="markdown")
    eval_app.command("locomo")(eval_locomo_cmd)
    eval_app.command("longmemeval")(eval_longmemeval_cmd)
    eval_app.command("board")(eval_board_cmd)
    eval_app.command("profile")(eval_profile_cmd)
    app.add_typer(eval_app, name="eval")
