"""Every Python block of the README, run as a reader runs it: after `memctx demo` (what
`./scripts/run.sh` stores) in a fresh MEMCTX_HOME, beside `memctx serve` with a key, and with the
`openai` client pointed at a loopback OpenAI-compatible server that records what the model is sent.
So the library example and the proxy example cannot rot."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from fastapi import FastAPI, Request

from api_support import free_port, memctx_serve, serve

ROOT = Path(__file__).resolve().parents[2]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)

pytestmark = pytest.mark.slow


def _memctx(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-m", "memctx", *args], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def model():
    """An OpenAI-compatible server whose reply names the message it answered; `received` holds the
    chat messages of each request."""
    received: list[list[dict]] = []
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        received.append(body["messages"])
        asked = body["messages"][-1]["content"]
        return {"id": f"chatcmpl-{len(received)}", "object": "chat.completion", "created": 1, "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": f"(reply to: {asked})"},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

    with serve(app) as url:
        yield url, received


@pytest.fixture(scope="module")
def reader(tmp_path_factory, model):
    """A reader's shell after the quick start: the demo stored in its own MEMCTX_HOME, `memctx serve`
    running on it with a key, and OPENAI_* naming the loopback model."""
    home = tmp_path_factory.mktemp("readme") / "home"
    env = {**os.environ, "MEMCTX_HOME": str(home), "OPENAI_BASE_URL": model[0] + "/v1", "OPENAI_API_KEY": "sk-test"}
    env.pop("MEMCTX_DATABASE_URL", None)
    _memctx(["demo"], env)
    port = free_port()
    try:
        with memctx_serve(["serve", "--port", str(port)], {**env, "MEMCTX_UPSTREAM_BASE_URL": model[0] + "/v1"},
                          home.parent / "serve.log", cwd=ROOT) as base_url:
            key = json.loads(_memctx(["keys", "create", "--user", str(uuid.uuid4())], env))["key"]
            yield {**env, "MEMCTX_API_URL": base_url, "MEMCTX_API_KEY": key}
    finally:
        _memctx(["db", "stop"], env)


def test_every_python_block_of_the_readme_runs(reader, model, tmp_path):
    """Each block as a script; then what the library example and the proxy example sent the model."""
    received = model[1]
    sent: dict[int, list[list[dict]]] = {}
    printed: dict[int, str] = {}
    for i, block in enumerate(BLOCKS):
        received.clear()
        script = tmp_path / f"readme_{i}.py"
        script.write_text(block)
        done = subprocess.run([sys.executable, str(script)], env=reader, cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, f"README Python block {i}:\n{block}\n{done.stdout}\n{done.stderr}"
        sent[i], printed[i] = list(received), done.stdout
    library = next(i for i, b in enumerate(BLOCKS) if "memctx.connect_embedded()" in b)
    question = "Which dinner did you suggest for Tomás's birthday?"
    assert printed[library].strip() == f"(reply to: {question})"
    (messages,) = sent[library]
    assert messages[-1] == {"role": "user", "content": question}
    assert sum(question in m["content"] for m in messages) == 1
    # a new conversation, answered from the demo's Lisbon conversation: the user's memory
    assert "tasting menu in Príncipe Real" in "\n".join(m["content"] for m in messages)
    stored = [json.loads(line) for line in _memctx(["messages", "lisbon-follow-up"], reader).splitlines()]
    assert [(m["role"], m["text"]) for m in stored] == [("user", question), ("assistant", f"(reply to: {question})")]

    proxy = next(i for i, b in enumerate(BLOCKS) if "X-Memctx-Conversation" in b)
    first, second = sent[proxy]
    assert second[-1] == {"role": "user", "content": "Where does my sister live?"}
    assert "My sister Ana lives in Porto." in "\n".join(m["content"] for m in second[:-1])
