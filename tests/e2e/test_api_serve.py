"""The HTTP API's page (docs/API.md) as a user runs it: `memctx serve` as a process on the test
database, `memctx keys create`, then the curl commands, the node script and the Python snippet
exactly as the page shows them; the README shows the same commands."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from api_support import free_port, memctx_serve

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
PAGE = (ROOT / "docs" / "API.md").read_text()
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", PAGE, re.S)


def _block(lang: str, containing: str) -> str:
    found = [body for kind, body in BLOCKS if kind == lang and containing in body]
    assert len(found) == 1, f"docs/API.md has no single {lang} block with {containing!r}"
    return found[0]


def test_the_readme_shows_the_api_page_s_commands_as_the_test_runs_them():
    for containing in ("memctx serve", "curl"):
        assert f"```bash\n{_block('bash', containing)}```" in README


def _commands(block: str) -> list[list[str]]:
    """The README block's commands, without their comments."""
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]


@pytest.fixture
def served(database_url, tmp_path):
    """`memctx serve` exactly as docs/API.md starts it, on a free port instead of 8080."""
    serve, keys_create = _commands(_block("bash", "memctx serve"))
    assert serve[:2] == ["memctx", "serve"] and keys_create[:3] == ["memctx", "keys", "create"]
    port = free_port()
    env = {**os.environ, "MEMCTX_DATABASE_URL": database_url}
    args = [a if a != "8080" else str(port) for a in serve[1:]]
    with memctx_serve(args, env, tmp_path / "serve.log", cwd=ROOT) as base_url:
        made = subprocess.run([sys.executable, "-m", "memctx", *keys_create[1:]], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=120, check=True)
        key = json.loads(made.stdout)["key"]
        yield {**env, "MEMCTX_API_URL": base_url, "MEMCTX_API_KEY": key}


@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("node") is None, reason="needs curl and node")
def test_the_curl_node_and_python_examples_run_against_memctx_serve(served):
    curl = subprocess.run(["bash", "-euo", "pipefail", "-c", _block("bash", "curl")], env=served, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=True)
    created, stored, context = [json.loads(line) for line in curl.stdout.replace("}{", "}\n{").splitlines()]
    assert created["external_id"] == "support-42"
    assert [m["seq"] for m in stored["messages"]] == [1]
    assert "table for six" in "\n".join(m["content"] for m in context["messages"])
    assert context["budget"] == 2000 and context["sources"]

    script = ROOT / "docs" / "examples" / "context.mjs"
    assert script.read_text() in _block("js", "fetch")  # the page shows the file the test runs
    node = subprocess.run(["node", str(script)], env=served, cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=True)
    messages = json.loads(node.stdout)
    assert messages[-1] == {"role": "user", "content": "How many people is the table for?"}
    assert "table for six" in json.dumps(messages)

    python = subprocess.run([sys.executable, "-c", _block("python", "get_working_context")], env=served, cwd=ROOT,
                            capture_output=True, text=True, timeout=120, check=True)
    assert "table for six" in python.stdout

    forbidden = {**served, "MEMCTX_API_KEY": "mck_not-a-key"}
    denied = subprocess.run(["node", str(script)], env=forbidden, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert denied.returncode != 0 and "memctx answered 401" in denied.stderr
