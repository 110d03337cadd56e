"""The core never imports its outer layers: worker/, api/ and mcp_tools/ plug into it."""

from __future__ import annotations

import ast
from pathlib import Path

from typer.testing import CliRunner

from memctx.cli import app

CORE = Path(__file__).resolve().parents[2] / "memctx"
OUTER = {"worker", "api", "mcp_tools"}


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_no_core_module_imports_an_outer_layer():
    offenders = {str(p.relative_to(CORE.parent)): sorted(_imported_roots(p) & OUTER) for p in CORE.rglob("*.py")}
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_worker_registers_its_command_through_the_entry_point():
    result = CliRunner().invoke(app, ["worker", "--help"])
    assert result.exit_code == 0 and "--dispatch" in result.output
