"""CLI commands that drive and inspect a conversation's summaries by hand.

`summarize`, `chain`, `board`, `edit-board`, `close`, `continuity`, `edit-summary` and `backlog`:
each calls one library function and prints JSON (or a table for `chain`, a listing for `board`).
`eval_board_cmd` is `memctx eval board`, registered with the eval group in memctx.cli.context. `memctx worker` itself is registered by
the worker package (worker/cli.py), so the core never imports it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from memctx.cli.common import BAD_INPUT, CONVERSATION_HELP, USER_HELP, conversation_id, fail, parse_uuid, user_id
from memctx.config import Settings
from memctx.summarize.types import SECTION, SECTIONS


def eval_board_cmd(path: Path = typer.Argument(..., exists=True, dir_okay=False, help="a LoCoMo JSON file"),
                   as_json: bool = typer.Option(False, "--json", help="print the full results as JSON"),
                   labels: Optional[Path] = typer.Option(None, dir_okay=False,
                                                         help="labelled utterances (default: the dev sets shipped)"),
                   llm: bool = typer.Option(False, "--llm", help="summarize with the model of MEMCTX_LLM_BASE_URL / "
                                                                 "MEMCTX_LLM_MODEL (falling back to extractive per call)"),
                   conversations: Optional[int] = typer.Option(None, min=1, help="only the file's first N conversations"),
                   sessions: Optional[int] = typer.Option(None, min=1, help="only each conversation's first N sessions"),
                   max_reply_tokens: Optional[int] = typer.Option(None, min=1, help="with --llm: cut each reply at N "
                                                                  "tokens (a cut reply falls back), for a slow model"),
                   ) -> None:
    """Score the summary board on LoCoMo's gold facts and session summaries.

    Precision and coverage of its items, section sizes, ROUGE-L against lead-k, and its
    detectors on labelled utterances. No database; no key unless --llm."""
    from memctx.evaluate.board import LABEL_SETS, run_board_eval
    from memctx.providers import make_summarizer
    from memctx.summarize.llm import LLMSummarizer
    from memctx.tokens import get_counter

    settings = Settings()
    counter = get_counter(settings.token_encoding)
    if llm and not (settings.llm_base_url or settings.llm_api_key):
        fail("--llm needs MEMCTX_LLM_BASE_URL (an OpenAI-compatible server) or MEMCTX_LLM_API_KEY (OpenAI)", BAD_INPUT)
    summarizer = make_summarizer(settings.model_copy(update={"summarizer": "llm"}), counter) if llm else None
    if max_reply_tokens is not None and isinstance(summarizer, LLMSummarizer):
        summarizer.max_reply_tokens = max_reply_tokens
    results = run_board_eval(path, counter, every=settings.board_update_frequency,
                             max_tokens=settings.board_length, labels={"custom": labels} if labels else LABEL_SETS,
                             summarizer=summarizer, conversations=conversations, sessions=sessions)
    if as_json:
        print(json.dumps(results, ensure_ascii=False))
        return
    out = Console()
    for name, share in results["precision"].items():
        out.print(f"{name}: {results['items'][name]} items, {share:.1%} cite a gold fact's evidence turn")
    cov = results["fact_coverage"]
    out.print(f"fact coverage: {cov['covered']}/{cov['observations']} gold facts ({cov['share']:.1%}), "
              f"{cov['per_100_tokens']} per 100 key-fact tokens")
    summ = results["summaries"]
    out.print(f"summaries: ROUGE-L {summ['rouge_l']:.3f} vs lead-k {summ['lead_rouge_l']:.3f} "
              f"({summ['sessions']} sessions)")
    sizes = ", ".join(f"{n} {v['most']}/{v['cap']}" for n, v in results["section_sizes"].items())
    out.print(f"largest sections (items/cap): {sizes}")
    if "llm" in results:
        stats = results["llm"]
        out.print(f"{stats['model']}: calls {stats['calls']}, fell back {stats['fallbacks']}, failures "
                  f"{stats['failures']}, {stats['unsourced_items']} board items citing no message")
    for label_set, scored in results["labelled"].items():
        for name, v in scored["detectors"].items():
            out.print(f"{label_set} detector {name}: precision {v['precision']:.1%}, recall {v['recall']:.1%} "
                      f"({v['detected']} detected, {v['labelled']} labelled)")


def summarize_cmd(conversation: str = typer.Argument(..., help=CONVERSATION_HELP),
                  user: Optional[str] = typer.Option(None, help=USER_HELP),
                  regenerate: bool = typer.Option(False, "--regenerate",
                                                  help="discard every summary (edited ones too) and rebuild")
                  ) -> None:
    """Do a conversation's pending summarization now.

    The board's incomplete tail is included and every summary is embedded."""
    from memctx.app import open_app
    from memctx.pipeline import catchup, embedding
    from memctx.store import UnknownConversation

    owner = user_id(user)
    with open_app(Settings()) as memctx_app:
        conv = conversation_id(memctx_app, owner, conversation)
        try:
            result = (catchup.regenerate(memctx_app, owner, conv) if regenerate
                      else catchup.catch_up(memctx_app, owner, conv, force_board=True))
        except UnknownConversation as exc:
            fail(str(exc), BAD_INPUT)
        backfilled = embedding.backfill_conversation(memctx_app, owner, conv)  # "now": every summary embedded
    print(json.dumps({**result.as_json(), "backfilled_summaries": backfilled}))


def chain_cmd(conversation: str = typer.Argument(..., help=CONVERSATION_HELP),
              user: Optional[str] = typer.Option(None, help=USER_HELP),
              as_json: bool = typer.Option(False, "--json", help="JSON lines instead of a table")) -> None:
    """Print the live chain: master, summaries high to low, raw recent messages."""
    from memctx.app import open_app
    from memctx.pipeline import catchup
    from memctx.store import UnknownConversation

    owner = user_id(user)
    with open_app(Settings()) as memctx_app:
        conv = conversation_id(memctx_app, owner, conversation)
        try:
            chain = catchup.live_chain(memctx_app, owner, conv)
        except UnknownConversation as exc:
            fail(str(exc), BAD_INPUT)
    if as_json:
        for c in chain:
            print(json.dumps(c.as_json()))
        return
    table = Table(title=f"live chain of {escape(conversation)}: {len(chain)} elements, "
                        f"{sum(c.token_count or 0 for c in chain)} tokens")
    for column in ("element", "covers", "tokens", "text"):
        table.add_column(column, overflow="fold")
    for c in chain:
        name = "master" if c.is_master else (f"L{c.level}" if c.kind == "summary" else c.role or "message")
        name += " (edited)" if c.edited else ""
        covers = f"{c.first_seq}" if c.first_seq == c.last_seq else f"{c.first_seq}–{c.last_seq}"
        text = c.text.replace("\n", " ")
        clipped = text[:100] + ("…" if len(text) > 100 else "")
        table.add_row(name, covers, str(c.token_count or ""), escape(clipped))
    Console().print(table)


def board_cmd(conversation: str = typer.Argument(..., help=CONVERSATION_HELP),
              user: Optional[str] = typer.Option(None, help=USER_HELP),
              as_json: bool = typer.Option(False, "--json", help="JSON: every item with its sources")) -> None:
    """Print the conversation's summary board: each item with the messages it came from."""
    from memctx.app import open_app
    from memctx.pipeline.board import get_board

    owner = user_id(user)
    with open_app(Settings()) as memctx_app:
        board = get_board(memctx_app, owner, conversation_id(memctx_app, owner, conversation))
    if as_json or board is None:
        print(json.dumps(board.view_json() if board else None, ensure_ascii=False))
        return
    out = Console()
    out.print(f"[bold]summary[/bold] (messages 1–{board.last_seq}): {escape(board.summary)}", highlight=False)
    for spec in SECTIONS:
        out.print(f"[bold]{spec.title}[/bold]", highlight=False)
        for index, item in enumerate(board.section(spec.name)):
            cited = ", ".join(s.external_id or str(s.id)[:8] for s in item.sources)
            mark = " (edited)" if item.edited else ""
            group = f"{item.group}: " if spec.grouped_by and item.group else ""
            out.print(escape(f"  {index}. {group}{item.text}{mark}  [{cited}]"), highlight=False)


def edit_board_cmd(conversation: str = typer.Argument(..., help=CONVERSATION_HELP),
                   section: str = typer.Argument(..., help=f"one of: {', '.join(SECTION)}"),
                   index: int = typer.Argument(..., help="the item's number, as `memctx board` lists it"),
                   text: str = typer.Argument(..., help="the item's new text"),
                   user: Optional[str] = typer.Option(None, help=USER_HELP)) -> None:
    """Rewrite one board item; it keeps its sources and is marked edited."""
    from memctx.app import open_app
    from memctx.pipeline.board import edit_board_item

    owner = user_id(user)
    with open_app(Settings()) as memctx_app:
        try:
            board = edit_board_item(memctx_app, owner, conversation_id(memctx_app, owner, conversation),
                                    section, index, text)
        except (LookupError, ValueError) as exc:
            fail(str(exc), BAD_INPUT)
    print(json.dumps(board.view_json()[section], ensure_ascii=False))


def close_cmd(conversation: str = typer.Argument(..., help=CONVERSATION_HELP),
              user: Optional[str] = typer.Option(None, help=USER_HELP)) -> None:
    """Close a conversation now: catch up and write its long-term summary."""
    from memctx.app import open_app
    from memctx.pipeline import longterm
    from memctx.store import UnknownConversation

    owner = user_id(user)
    with open_app(Settings()) as memctx_app:
        conv = conversation_id(memctx_app, owner, conversation)
        try:
            summary = longterm.close_conversation(memctx_app, owner, conv, explicit=True)
        except UnknownConversation as exc:
            fail(str(exc), BAD_INPUT)
    print(json.dumps(summary.as_json(), ensure_ascii=False))


def continuity_cmd(user: Optional[str] = typer.Option(None, help=USER_HELP),
                   current: Optional[str] = typer.Option(
                       None, help="the new conversation (excluded): UUID or external id")) -> None:
    """The continuity note for a user's new conversation: last conversation's summary and open items."""
    from memctx.app import open_app
    from memctx.pipeline import longterm

    owner = user_id(user)
    with open_app(Settings()) as memctx_app:
        current_id = conversation_id(memctx_app, owner, current) if current else None
        note = longterm.continuity_note(memctx_app, owner, current_conversation_id=current_id)
    print(json.dumps(note.as_json() if note else None, ensure_ascii=False))


def edit_summary_cmd(summary_id: str, text: str, user: Optional[str] = typer.Option(None, help=USER_HELP)
                     ) -> None:
    """Replace a live summary's text; it is kept (marked edited) until `summarize --regenerate`."""
    from memctx.app import open_app
    from memctx.pipeline import catchup

    owner, summary = user_id(user), parse_uuid(summary_id, "summary id")
    with open_app(Settings()) as memctx_app:
        try:
            edited = catchup.edit_summary(memctx_app, owner, summary, text)
        except (LookupError, ValueError) as exc:  # unknown summary; empty or invalid text
            fail(str(exc), BAD_INPUT)
    print(json.dumps({"id": str(edited.id), "tokens": edited.token_count, "edited": edited.edited}))


def backlog_cmd() -> None:
    """Outbox rows waiting for the worker (and the age of the oldest)."""
    from memctx.app import open_app
    from memctx.pipeline import dispatch

    with open_app(Settings()) as memctx_app:
        b = dispatch.backlog(memctx_app)
    print(json.dumps({"pending": b.pending, "oldest_s": round(b.oldest_s, 1), "dead": b.dead,
                      "unembedded_summaries": b.unembedded_summaries}))


def register(app: typer.Typer) -> None:
    """Add this layer's commands to the main app."""
    app.command("summarize")(summarize_cmd)
    app.command("chain")(chain_cmd)
    app.command("board")(board_cmd)
    app.command("edit-board")(edit_board_cmd)
    app.command("close")(close_cmd)
    app.command("continuity")(continuity_cmd)
    app.command("edit-summary")(edit_summary_cmd)
    app.command("backlog")(backlog_cmd)
