"""The `memctx` command line: database, migrations, ingest, demo.

Owns: parsing arguments, building `Settings` and the `App`, printing results (JSON lines on
stdout, progress and errors on stderr). Each command calls one library function.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional
from uuid import UUID

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from memctx import db, doors
from memctx.cli import context, doctor, pipeline, profile, search
from memctx.cli.common import (BAD_INPUT, CONVERSATION_HELP, USER_HELP, conversation_id, err, fail, parse_uuid,
                               user_id)
from memctx.config import Settings
from memctx.migrate import EmbeddingSpaceMismatch, MigrationError, NotReady
from memctx.models import InvalidInput

if TYPE_CHECKING:
    from memctx.store.ingest import IngestResult

# The library's heavier modules (the App, the store, the assembler, the pipeline: numpy, onnxruntime,
# the openai client) are imported by the commands that use them: `memctx --help` and
# `memctx keys create` start without them.

app = typer.Typer(help="memctx: Postgres-native memory and context for LLM chat.", no_args_is_help=True,
                  rich_markup_mode="markdown",
                  pretty_exceptions_enable=False)
db_app = typer.Typer(help="The database memctx uses (embedded by default).", no_args_is_help=True,
                     rich_markup_mode="markdown")
app.add_typer(db_app, name="db")

DEMO_FILE = Path(__file__).resolve().parents[1] / "data" / "demo.jsonl"


def _settings() -> Settings:
    return Settings()


@app.callback()
def _main() -> None:
    """Commands share one configuration: MEMCTX_* environment variables (see README)."""


@db_app.command("url")
def db_url() -> None:
    """Print the DSN in use, starting the embedded Postgres if needed."""
    print(db.database_url(_settings()))


@db_app.command("status")
def db_status() -> None:
    """Say what is running where."""
    status = db.embedded_status(_settings())
    state = "running" if status.running else "stopped"
    if status.mode == "embedded":
        print(f"embedded Postgres {state} (data: {status.pgdata}" + (f", pid {status.pid}" if status.pid else "") + ")")
        if status.running:
            print(f"url: {status.url}")
    else:
        print(f"external Postgres ({'reachable' if status.running else 'unreachable'}): {status.url}")


@db_app.command("stop")
def db_stop() -> None:
    """Stop the embedded Postgres."""
    print("stopped" if db.stop_embedded(_settings()) else "not running")


@app.command()
def migrate() -> None:
    """Apply pending migrations and fix the embedding space for the configured embedder."""
    from memctx.app import prepare_database

    try:
        applied = prepare_database(_settings())
    except (MigrationError, EmbeddingSpaceMismatch) as exc:
        fail(str(exc))
    print(f"applied {len(applied)} migration(s)" + (": " + ", ".join(applied) if applied else ""))


def _ingest_with_progress(memctx_app, path: Path, fmt: str, user: UUID) -> list[IngestResult]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from memctx.store.ingest import ingest, load_file

    conversations = load_file(path, fmt)
    total = sum(len(c.messages) for c in conversations)
    with Progress(
            TextColumn("embedding + storing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            console=err, transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task("ingest", total=total)
        results = ingest(memctx_app.store, conversations, user,
                         on_embedded=lambda n: progress.advance(task, n))
    return results


@app.command("ingest")
def ingest_cmd(path: Path = typer.Argument(..., exists=True, dir_okay=False, help="file to ingest"),
               format: str = typer.Option("jsonl", "--format", "-f", help="locomo or jsonl"),
               user: Optional[str] = typer.Option(None, help=USER_HELP)) -> None:
    """Ingest a conversation file; prints one JSON line per conversation.

    One transaction: all of the file or nothing. Running it again stores nothing new."""
    import psycopg

    from memctx.app import open_app

    owner = user_id(user)
    try:
        with open_app(_settings()) as memctx_app:
            results = _ingest_with_progress(memctx_app, path, format, owner)
    except InvalidInput as exc:
        fail(f"nothing was stored: {exc}", BAD_INPUT)
    except (NotReady, EmbeddingSpaceMismatch) as exc:
        fail(str(exc))
    except psycopg.DatabaseError as exc:  # the one transaction was rolled back
        fail(f"nothing was stored: the database refused it: {exc.diag.message_primary or exc}")
    for result in results:
        print(json.dumps(result.as_json()))


DEMO_QUESTION = "What should I keep in mind when booking Tomás's birthday dinner?"
# The demo's history is ~560 tokens: at 450 it does not fit, so memctx chooses what to send (memories
# by relevance, quotes shortened to what the rest does not say, the last turn) and says why.
DEMO_BUDGET = 450


@app.command()
def demo(path: Path = typer.Option(DEMO_FILE, help="a JSONL conversation file"),
         question: str = typer.Option(DEMO_QUESTION, help="the new message to build a context for"),
         budget: int = typer.Option(DEMO_BUDGET, min=64, help="token budget of the working context")) -> None:
    """Run memctx end to end on a demo conversation, and show what it built.

    Starts the database, migrates, ingests the demo conversations and summarizes them as the worker
    would, then shows what was stored and the working context a chat handler gets for a new message
    (`memctx.connect_embedded().context(...)`), with why each line is in it."""
    from memctx.app import open_app, prepare_database
    from memctx.client import Memctx
    from memctx.pipeline.catchup import catch_up
    from memctx.store import DEFAULT_USER

    settings = _settings()
    applied = prepare_database(settings)
    err.print(f"database: {escape(db.database_url(settings))}  (migrations applied now: {len(applied)})",
              highlight=False)
    with open_app(settings) as memctx_app:
        results = _ingest_with_progress(memctx_app, path, "jsonl", DEFAULT_USER)
        for result in results:
            print(json.dumps(result.as_json()))
        for result in results:  # as the worker does once a conversation is idle: the board's tail too
            catch_up(memctx_app, DEFAULT_USER, result.conversation_id, force_board=True)
        _print_stored(memctx_app, DEFAULT_USER)
        wc = Memctx(memctx_app).context(question, user=DEFAULT_USER, conversation=results[0].conversation_id,
                                        budget=budget)
    _print_context(wc)


def _print_stored(memctx_app, user: UUID) -> None:
    from memctx.pipeline.board import get_board
    from memctx.pipeline.catchup import live_chain

    out = Console()
    for conv in memctx_app.store.conversation_stats(user):
        table = Table(title=f"{escape(conv['title'] or conv['external_id'] or '')}  ({conv['message_count']} messages, "
                            f"{conv['tokens']} tokens, {conv['embedded']} embedded)")
        for column in ("seq", "role", "tokens", "text"):
            table.add_column(column, overflow="fold")
        for m in memctx_app.store.list_messages(user, conv["id"]):
            table.add_row(str(m.seq), m.role, str(m.token_count), escape(_clip(m.text, 90)))
        out.print(table)
        chain = Table(title="live chain (what replaces the full history)")
        for column in ("element", "covers", "tokens", "text"):
            chain.add_column(column, overflow="fold")
        for item in live_chain(memctx_app, user, conv["id"]):
            kind = "master" if item.is_master else (f"summary L{item.level}" if item.kind == "summary" else item.role)
            chain.add_row(kind, f"{item.first_seq}–{item.last_seq}", str(item.token_count),
                          escape(_clip(item.text, 120)))
        out.print(chain)
        board = get_board(memctx_app, user, conv["id"])
        if board is not None:
            out.print(f"[bold]summary board[/bold] (messages 1–{board.last_seq})", highlight=False)
            for section in ("key_facts", "constraints", "action_items", "pending_questions"):
                lines = board.texts(section)
                out.print(f"  {section.replace('_', ' ')}: " + ("; ".join(escape(t) for t in lines) if lines else "–"),
                          highlight=False)


def _print_context(wc) -> None:
    out = Console()
    out.rule(f"working context: {wc.tokens}/{wc.budget} tokens")
    for message in wc.messages:
        out.print(f"[bold]{message['role']}[/bold]: {escape(message['content'])}", highlight=False)
    table = Table(title="where every line came from")
    for column in ("section", "kind", "external id", "messages", "why"):
        table.add_column(column)
    for source in wc.sources:
        row = source.as_json()
        covered = f"{row['first_seq']}–{row['last_seq']}" if row.get("first_seq") is not None else str(row.get("seq", ""))
        table.add_row(row.get("section", ""), row["kind"], escape(str(row.get("external_id") or "")), covered,
                      escape(why(source)))
    out.print(table)
    for cut in wc.cuts:
        out.print(escape(f"{cut.action}: {len(cut.ids)} {cut.kind} item(s) of {cut.section}, {cut.tokens} tokens — "
                         f"{cut.reason}"), highlight=False)


def why(source) -> str:
    """Why a line is in the context, in words, from its source."""
    detail = source.detail or ""
    if source.section == "memories":
        if source.kind != "message":
            return "a summary memory search found for the question"
        said = "search hit for the question" if detail.startswith("hit") else "the turn paired with a hit"
        return said + (", as its relevant passage" if detail.endswith("excerpt") else "")
    if source.section == "external":
        return f"web result: {detail}"
    return {"master": "the master summary of the whole conversation", "board": "the summary board's facts and constraints",
            "compressed": "older recent turns, compressed"}.get(
        detail, f"a {detail} summary of older turns" if detail.startswith("level") else "a recent turn, as it was said")


def _clip(text: str, width: int) -> str:
    return text[:width] + ("…" if len(text) > width else "")


@app.command("forget-user")
def forget_user(user: str = typer.Argument(..., help="the user's UUID")) -> None:
    """Delete every row of a user, in every table."""
    from memctx.app import open_app

    owner = parse_uuid(user, "user")
    with open_app(_settings()) as memctx_app:
        print(json.dumps(memctx_app.store.forget_user(owner)))


@app.command("messages")
def messages_cmd(conversation: str = typer.Argument(..., help=CONVERSATION_HELP),
                 user: Optional[str] = typer.Option(None, help=USER_HELP),
                 after: int = typer.Option(0, min=0, help="only messages after this seq"),
                 limit: Optional[int] = typer.Option(None, min=1, help="at most this many messages")) -> None:
    """Print a conversation's messages as JSON lines."""
    from memctx.app import open_app

    owner = user_id(user)
    with open_app(_settings()) as memctx_app:
        conv = conversation_id(memctx_app, owner, conversation)
        rows = memctx_app.store.list_messages(owner, conv, after_seq=after, limit=limit)
        for m in rows:
            print(json.dumps({"id": str(m.id), "seq": m.seq, "role": m.role, "external_id": m.external_id,
                              "text": m.text, "token_count": m.token_count, "created_at": m.created_at.isoformat()}))


def _register_outer_layers(app: typer.Typer) -> None:
    """worker/, api/ and mcp_tools/ add their own commands through the `memctx.commands` entry
    points (pyproject.toml): the core never imports them."""
    for register in doors.plugged(doors.COMMANDS):
        register(app)


context.register(app)
pipeline.register(app)
doctor.register(app)
profile.register(app)
search.register(app)
_register_outer_layers(app)


def main() -> None:
    try:
        app()
    except NotReady as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
