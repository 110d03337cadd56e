"""The layers point one way: the doors (worker/, api/, mcp_tools/) depend on the core, never on
each other, and the store, the lowest room of the write path, depends on neither assembly nor the App.
The learning layer (memctx/learn/) is a room of its own beside summarize/: fed by the write path
(pipeline/), read by assembly, imported by no door."""

from __future__ import annotations

import ast
from pathlib import Path

from importlib.metadata import entry_points

from typer.testing import CliRunner

from memctx import doors
from memctx.cli import app

ROOT = Path(__file__).resolve().parents[2]


def _doors() -> set[str]:
    """The doors, as the installed entry points name them (memctx.api, memctx.worker, ...)."""
    return {entry.value.split(":")[0].rsplit(".", 1)[0]
            for group in (doors.COMMANDS, doors.ROUTERS, doors.SERVICES)
            for entry in entry_points(group=group)}


DOORS = _doors()
CORE = "memctx"  # its folder links the doors' folders in (memctx/api -> ../api): they are walked as doors


def _folder(module: str) -> Path:
    """The doors' code lives in the top-level folders the links point at."""
    return ROOT / module.removeprefix("memctx.").replace(".", "/")


def _imported(path: Path) -> set[str]:
    """The absolute module names `path` imports, anywhere in it (functions and TYPE_CHECKING too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def _offenders(package: str, forbidden: set[str]) -> dict[str, list[str]]:
    """Modules under `package` that import one of `forbidden` (a module or anything inside it)."""
    found = {}
    for path in (ROOT / package).rglob("*.py"):  # rglob does not follow the links to the doors
        bad = sorted(n for n in _imported(path) if any(n == f or n.startswith(f + ".") for f in forbidden))
        if bad:
            found[str(path.relative_to(ROOT))] = bad
    return found


def test_the_doors_are_the_linked_folders():
    assert DOORS == {"memctx.api", "memctx.worker", "memctx.mcp_tools"}
    for door in DOORS:
        link = ROOT / door.replace(".", "/")
        assert link.is_symlink() and link.resolve() == _folder(door), door


def test_no_core_module_imports_a_door():
    assert _offenders(CORE, DOORS) == {}


def test_no_door_imports_another():
    for door in DOORS:
        assert _offenders(str(_folder(door).relative_to(ROOT)), DOORS - {door}) == {}, door


def test_the_store_depends_on_neither_assembly_nor_the_app():
    assert _offenders("memctx/store", {"memctx.assemble", "memctx.app"}) == {}


def test_no_door_imports_the_learning_layer():
    for door in DOORS:
        assert _offenders(door, {"memctx.learn"}) == {}, door


def test_the_learning_layer_knows_neither_the_write_path_nor_assembly():
    # its rules are pure and its reader reads: the pipeline writes what it learns, assembly reads it
    assert _offenders("memctx/learn", {"memctx.pipeline", "memctx.assemble", "memctx.app", "memctx.store"}) == {}
    assert _offenders("memctx/summarize", {"memctx.learn"}) == {}


def test_learning_is_fed_by_the_write_path_and_read_by_retrieval_and_assembly():
    assert "memctx.pipeline.learning" in _imported(ROOT / "memctx" / "pipeline" / "catchup.py")
    for reader in (ROOT / "memctx" / "assemble" / "context.py", ROOT / "memctx" / "retrieve" / "search.py"):
        assert any(n.startswith("memctx.learn.") for n in _imported(reader)), reader


def test_authentication_lives_in_the_core():
    assert not (ROOT / "api" / "auth.py").exists()
    assert "memctx.auth" in _imported(ROOT / "mcp_tools" / "http.py") & _imported(ROOT / "api" / "deps.py")


def test_the_worker_registers_its_command_through_the_entry_point():
    result = CliRunner().invoke(app, ["worker", "--help"])
    assert result.exit_code == 0 and "--dispatch" in result.output


def test_the_mcp_tools_plug_into_the_http_server_through_the_entry_point():
    from memctx.mcp_tools.http import router

    assert router in doors.plugged(doors.ROUTERS)
