"""`memctx --help` reads as sentences: each command's summary on one line, never cut mid-sentence."""

from __future__ import annotations

import inspect

import typer
from typer.testing import CliRunner

from memctx.cli import app


def _commands(group, path=("memctx",)):
    for name, command in getattr(group, "commands", {}).items():
        yield (*path, name), command
        yield from _commands(command, (*path, name))


def test_every_command_summary_is_one_line_of_the_listing():
    listing = {}
    for path, command in _commands(typer.main.get_command(app)):
        first = " ".join(inspect.cleandoc(command.help or "").split("\n\n")[0].replace("`", "").split())
        parent = path[1:-1]
        if parent not in listing:
            result = CliRunner().invoke(app, [*parent, "--help"], env={"COLUMNS": "400"})
            assert result.exit_code == 0, result.output
            listing[parent] = result.output
        assert first and any(first in line for line in listing[parent].splitlines()), (path, first)
