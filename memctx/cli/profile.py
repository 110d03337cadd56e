"""`memctx profile`: what memctx learned about a user, seen, corrected and forgotten; ratings.

    memctx profile [list] [--status all] [--json]   the items, each with its sources
    memctx profile edit ID "text"                    the item in the user's words
    memctx profile delete ID                         a tombstone: never learned again
    memctx profile add "text" [--kind instruction]   an item of the user's own
    memctx profile rate KIND ID RATING [--note …]    useful / wrong / outdated
    memctx profile ratings                           every rating, newest first
    memctx profile procedures                        what worked after tool errors

Each command calls one function of `memctx.pipeline.profile`; bad input is one line on stderr.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from memctx.cli.common import BAD_INPUT, USER_HELP, fail, parse_uuid, user_id
from memctx.config import Settings
from memctx.models import InvalidInput

profile_app = typer.Typer(help="What memctx learned about a user: list, correct, delete, add, rate.",
                          rich_markup_mode="markdown", invoke_without_command=True)


def register(app: typer.Typer) -> None:
    app.add_typer(profile_app, name="profile")


def _pipeline():
    """memctx.pipeline.profile, imported by the commands that use it: the command line loads the
    library's heavy modules only where a command needs them (`memctx keys create` needs none)."""
    from memctx.pipeline import profile

    return profile


def _run(call: Callable[[Any], Any]) -> Any:
    from memctx.app import open_app

    with open_app(Settings()) as memctx_app:
        try:
            return call(memctx_app)
        except LookupError as exc:
            fail(str(exc), BAD_INPUT)
        except InvalidInput as exc:
            fail(str(exc), BAD_INPUT)


@profile_app.callback()
def _default(ctx: typer.Context, user: Optional[str] = typer.Option(None, help=USER_HELP),
             status: str = typer.Option("active", help="active, replaced, deleted or all"),
             as_json: bool = typer.Option(False, "--json", help="one JSON object per item")) -> None:
    """List the user's profile (the default command)."""
    if ctx.invoked_subcommand is None:
        list_items(user=user, status=status, as_json=as_json)


@profile_app.command("list")
def list_items(user: Optional[str] = typer.Option(None, help=USER_HELP),
               status: str = typer.Option("active", help="active, replaced, deleted or all"),
               as_json: bool = typer.Option(False, "--json", help="one JSON object per item")) -> None:
    """The items, each with its kind, value, confidence, sightings and sources."""
    owner = user_id(user)
    items = _run(lambda a: _pipeline().list_profile(a, owner, status=None if status == "all" else status))
    if as_json:
        for item in items:
            print(json.dumps(item.as_json()))
        return
    table = Table(title=f"profile of {owner}")
    for column in ("id", "person", "kind", "topic", "value", "seen", "confidence", "last seen", "status"):
        table.add_column(column)
    for i in items:
        table.add_row(str(i.id)[:8], escape(i.person), i.kind, i.topic, escape(i.value), str(i.seen_count),
                      f"{i.confidence:.2f}", f"{i.last_seen:%Y-%m-%d}", i.status)
    Console().print(table)


@profile_app.command("edit")
def edit(item: str = typer.Argument(..., help="the item's UUID"), value: str = typer.Argument(...),
         user: Optional[str] = typer.Option(None, help=USER_HELP)) -> None:
    """Correct an item: the words given are kept, also when its messages are learned from again."""
    owner, item_id = user_id(user), parse_uuid(item, "item")
    print(json.dumps(_run(lambda a: _pipeline().edit_item(a, owner, item_id, value)).as_json()))


@profile_app.command("delete")
def delete(item: str = typer.Argument(..., help="the item's UUID"),
           user: Optional[str] = typer.Option(None, help=USER_HELP)) -> None:
    """Delete an item: out of every context, never learned again."""
    owner, item_id = user_id(user), parse_uuid(item, "item")
    print(json.dumps(_run(lambda a: _pipeline().delete_item(a, owner, item_id)).as_json()))


@profile_app.command("add")
def add(value: str = typer.Argument(...), kind: str = typer.Option("fact", help="fact, preference, instruction or plan"),
        person: str = typer.Option("user", help="whose item: `user`, or a speaker's name"),
        user: Optional[str] = typer.Option(None, help=USER_HELP)) -> None:
    """Add an item in the user's words (an instruction is in every context from then on)."""
    owner = user_id(user)
    print(json.dumps(_run(lambda a: _pipeline().add_item(a, owner, value, kind=kind, person=person)).as_json()))


@profile_app.command("rate")
def rate(kind: str = typer.Argument(..., help="profile_item, message, summary or procedure"),
         item: str = typer.Argument(..., help="its UUID, as a context's sources give it"),
         rating: str = typer.Argument(..., help="useful, wrong or outdated"),
         note: Optional[str] = typer.Option(None, help="why, in a few words"),
         user: Optional[str] = typer.Option(None, help=USER_HELP)) -> None:
    """Rate what a context brought; every rating is kept with who gave it and when."""
    owner, item_id = user_id(user), parse_uuid(item, "id")
    stored = _run(lambda a: _pipeline().rate(a, owner, kind, item_id, rating, via="cli", rated_by="cli", note=note))
    print(json.dumps(stored.as_json()))


@profile_app.command("ratings")
def ratings(user: Optional[str] = typer.Option(None, help=USER_HELP),
            limit: int = typer.Option(100, min=1, max=10_000)) -> None:
    """Every rating of the user, newest first, as JSON lines."""
    owner = user_id(user)
    for stored in _run(lambda a: _pipeline().ratings(a, owner, limit=limit)):
        print(json.dumps(stored.as_json()))


@profile_app.command("procedures")
def procedures(user: Optional[str] = typer.Option(None, help=USER_HELP),
               limit: int = typer.Option(100, min=1, max=10_000)) -> None:
    """What worked after tool errors, as JSON lines: tool, error, fix, seen, resolved, sources."""
    owner = user_id(user)
    for p in _run(lambda a: _pipeline().procedures(a, owner, limit=limit)):
        print(json.dumps(p.as_json()))
