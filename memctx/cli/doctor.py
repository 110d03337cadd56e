"""`memctx doctor`: the machine and database checks of `memctx.doctor`, printed one line each."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.markup import escape

from memctx import doctor
from memctx.config import Settings

out = Console(highlight=False, soft_wrap=True)


def doctor_cmd(as_json: bool = typer.Option(False, "--json", help="one JSON object per check")) -> None:
    """Check that memctx can run on this machine; exit 1 if a check fails.

    Checks the CPU flags, a portable Postgres build, pgvector (cast, distance, HNSW),
    full-text search (in a scratch database), how the database is reached (warn: another machine
    in clear), the offline tokenizer and the embedding model."""
    checks = doctor.run(Settings())
    for check in checks:
        if as_json:
            print(json.dumps(check.as_json()))
            continue
        mark = ("[yellow]skip[/yellow]" if check.skipped else "[red]FAIL[/red]" if not check.ok
                else "[yellow]warn[/yellow]" if check.warn else "[green]ok[/green]  ")
        out.print(f"{mark} {check.name:<18} {escape(check.detail)}")
    failed = [c.name for c in checks if not c.ok]
    if failed and not as_json:
        out.print(f"[red]{len(failed)} check(s) failed:[/red] {', '.join(failed)}")
    raise typer.Exit(1 if failed else 0)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor_cmd)
