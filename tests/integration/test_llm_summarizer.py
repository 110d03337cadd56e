"""The LLM summarizer end to end, against a real OpenAI-compatible HTTP server on loopback.

The server below implements POST /v1/chat/completions with the shape of the OpenAI API and can
be told, per test, to answer with valid JSON, invalid JSON, the wrong schema, an HTTP error, or
to stall past the client's timeout. Nothing inside the openai client is mocked.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator
from uuid import UUID

import pytest

from memctx.summarize.extractive import ExtractiveSummarizer
from memctx.summarize.llm import FAILURE_KINDS, LLMSummarizer
from memctx.summarize.types import Board, SourceText
from memctx.tokens import get_counter

COUNTER = get_counter()
MAY_8 = datetime(2023, 5, 8, 13, 56)
MODEL = "test-model"


@dataclass
class Reply:
    """What the server does with one request."""

    content: str | None = None     # the assistant message content of a 200 chat.completion
    status: int = 200              # anything else: an error response with a JSON error body
    delay: float = 0.0             # seconds to stall before answering
    headers: dict[str, str] = field(default_factory=dict)


class FakeOpenAI:
    """A chat-completions server on 127.0.0.1 with a queue of scripted replies."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.queue: list[Reply] = []
        self.default = Reply(content=json.dumps({"summary": "Caroline adopted a puppy named Oscar."}))
        self.stop = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                fake.requests.append({"path": self.path, "body": body,
                                      "auth": self.headers.get("Authorization")})
                reply = fake.queue.pop(0) if fake.queue else fake.default
                if reply.delay and fake.stop.wait(reply.delay):
                    return
                payload = completion(reply.content) if reply.status == 200 else {
                    "error": {"message": "scripted failure", "type": "server_error", "code": None}}
                data = json.dumps(payload).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) before the reply

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> "FakeOpenAI":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def completion(content: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1_700_000_000, "model": MODEL,
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": content, "refusal": None}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def failures_seen() -> list[str]:
    return []


@pytest.fixture
def llm(server: FakeOpenAI, failures_seen: list[str]) -> Iterator[LLMSummarizer]:
    with LLMSummarizer(base_url=server.base_url, model=MODEL, api_key="sk-test", timeout=0.4,
                       max_retries=0, fallback=ExtractiveSummarizer(COUNTER), counter=COUNTER,
                       on_failure=failures_seen.append) as summarizer:
        yield summarizer


def msg(seq: int, speaker: str, text: str) -> SourceText:
    return SourceText(UUID(int=seq), "message", "user", speaker, text, seq, seq, MAY_8, 0)


SOURCES = [msg(1, "Caroline", "I adopted a puppy named Oscar yesterday!"), msg(2, "Melanie", "Aww, congrats!"),
           msg(3, "Caroline", "He is 3 months old and loves the beach.")]


def summarize(llm: LLMSummarizer, sources=SOURCES, **kw: Any):
    return llm.summarize(sources, level=kw.pop("level", 1), is_master=kw.pop("is_master", False),
                         max_tokens=kw.pop("max_tokens", 200), **kw)


def prompt_text(request: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in request["body"]["messages"])


def test_valid_reply_becomes_the_summary(server: FakeOpenAI, llm: LLMSummarizer, failures_seen: list[str]) -> None:
    draft = summarize(llm)
    assert draft.content == "[8 May 2023]\nCaroline adopted a puppy named Oscar."
    assert (draft.summarizer, draft.fallback) == ("llm:test-model", False)
    assert draft.token_count == COUNTER.count(draft.content)
    [request] = server.requests
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer sk-test"
    body = request["body"]
    assert body["model"] == MODEL and body["temperature"] == 0
    assert body["response_format"] == {"type": "json_object"}
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    text = prompt_text(request)
    for source in SOURCES:
        assert f"{source.speaker}: {source.text}" in text
    assert "[#1 · 8 May 2023]" in text and "JSON" in text and "at most 150 words" in text
    assert llm.failures == {kind: 0 for kind in FAILURE_KINDS} and failures_seen == []


def test_prompt_follows_the_level(server: FakeOpenAI, llm: LLMSummarizer) -> None:
    l1 = SourceText(UUID(int=11), "summary", None, None, "[8 May 2023]\nCaroline: I adopted Oscar.", 1, 3, None, 1)
    l1b = SourceText(UUID(int=12), "summary", None, None, "[9 May 2023]\nMelanie: I ran 5 km.", 4, 6, None, 1)
    draft = summarize(llm, [l1, l1b], level=2)
    assert draft.content.startswith("[8 May 2023 – 9 May 2023]\n")
    text = prompt_text(server.requests[-1])
    assert "level-2 summary" in text and "[summary, level 1, messages 4–6]" in text and "I ran 5 km." in text

    master = SourceText(UUID(int=13), "summary", None, None, "[1 May 2023]\nCaroline: I live in Denver.",
                        1, 81, None, 4)
    summarize(llm, [master, l1b], level=4, is_master=True, previous=master.text)
    text = prompt_text(server.requests[-1])
    assert "Current master summary:\n[1 May 2023]\nCaroline: I live in Denver." in text
    assert text.count("I live in Denver.") == 1  # the master is not repeated among the newer summaries
    assert "Newer summaries" in text and "I ran 5 km." in text


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (Reply(content="Sure! Here is the summary: Caroline adopted Oscar."), "invalid_json"),
        (Reply(content=""), "invalid_json"),
        (Reply(content=json.dumps({"text": "Caroline adopted Oscar."})), "schema"),
        (Reply(content=json.dumps({"summary": "   "})), "schema"),
        (Reply(content=json.dumps(["Caroline adopted Oscar."])), "schema"),
        (Reply(status=500), "http"),
        (Reply(status=401), "http"),
    ],
)
def test_failures_fall_back_to_extractive_and_are_counted(
    server: FakeOpenAI, llm: LLMSummarizer, failures_seen: list[str], reply: Reply, kind: str,
) -> None:
    server.queue.append(reply)
    draft = summarize(llm)
    expected = ExtractiveSummarizer(COUNTER).summarize(SOURCES, level=1, is_master=False, max_tokens=200)
    assert draft.fallback and draft.summarizer == "extractive" and draft.content == expected.content
    assert llm.failures[kind] == 1 and sum(llm.failures.values()) == 1
    assert failures_seen == [kind]
    assert len(server.requests) == 1  # max_retries=0: one attempt


def test_timeout_falls_back_quickly(server: FakeOpenAI, llm: LLMSummarizer, failures_seen: list[str]) -> None:
    server.queue.append(Reply(content=json.dumps({"summary": "too late"}), delay=5.0))
    start = time.perf_counter()
    draft = summarize(llm)
    assert time.perf_counter() - start < 2.0
    assert draft.fallback and "Oscar" in draft.content
    assert llm.failures["timeout"] == 1 and failures_seen == ["timeout"]


def test_unreachable_server_counts_as_http(failures_seen: list[str]) -> None:
    with FakeOpenAI() as fake:
        base_url = fake.base_url
    with LLMSummarizer(base_url=base_url, model=MODEL, api_key=None, timeout=0.4, max_retries=0,
                       fallback=ExtractiveSummarizer(COUNTER), counter=COUNTER,
                       on_failure=failures_seen.append) as llm:
        assert summarize(llm).fallback
    assert failures_seen == ["http"]


def test_retries_recover_without_fallback(server: FakeOpenAI, failures_seen: list[str]) -> None:
    server.queue.append(Reply(status=500, headers={"retry-after-ms": "10"}))
    with LLMSummarizer(base_url=server.base_url, model=MODEL, api_key="sk-test", timeout=0.4, max_retries=1,
                       fallback=ExtractiveSummarizer(COUNTER), counter=COUNTER,
                       on_failure=failures_seen.append) as llm:
        draft = summarize(llm)
    assert not draft.fallback and "Oscar" in draft.content
    assert len(server.requests) == 2 and failures_seen == []


def test_overlong_reply_is_cut_to_the_budget(server: FakeOpenAI, llm: LLMSummarizer) -> None:
    long = " ".join(f"Caroline walked Oscar along beach number {i}." for i in range(200))
    server.queue.append(Reply(content=json.dumps({"summary": long})))
    draft = summarize(llm, max_tokens=40)
    assert not draft.fallback and draft.token_count == COUNTER.count(draft.content) <= 40
    assert draft.content.startswith("[8 May 2023]\nCaroline walked Oscar along beach number 0.")
    assert draft.content.split()[-1] in long.split()  # cut at a word boundary


def test_fenced_json_and_extra_keys_are_accepted(server: FakeOpenAI, llm: LLMSummarizer) -> None:
    server.queue.append(Reply(content='```json\n{"summary": "Caroline adopted Oscar.", "notes": 1}\n```'))
    draft = summarize(llm)
    assert not draft.fallback and draft.content == "[8 May 2023]\nCaroline adopted Oscar."


def test_no_request_for_nothing_to_summarize(server: FakeOpenAI, llm: LLMSummarizer) -> None:
    draft = summarize(llm, [])
    assert draft.content == "" and server.requests == []


BOARD_REPLY = {
    "summary": "Caroline adopted a puppy named Oscar; she prefers morning walks.",
    "key_facts": ["Caroline: adopted Oscar on 7 May 2023"],
    "entities": {"people": ["Caroline", "Oscar"], "places": ["the beach"]},
    "topics": ["puppy", "walks"],
    "action_items": ["Caroline: buy a leash"],
    "pending_questions": [],
    "constraints": ["Caroline: prefers morning walks"],
}


def test_board_update_through_the_model(server: FakeOpenAI, llm: LLMSummarizer) -> None:
    previous = Board.from_json({"constraints": ["Caroline: never call after 9 pm"]})
    server.queue.append(Reply(content=json.dumps(BOARD_REPLY)))
    board = llm.update_board(previous, SOURCES, max_tokens=100)
    assert board.summary == BOARD_REPLY["summary"]
    assert board.entities["people"] == ["Oscar", "Caroline"]  # most mentioned in the new messages first
    assert board.entities["places"] == ["the beach"]
    assert board.constraints == ["Caroline: never call after 9 pm", "Caroline: prefers morning walks"]
    assert (board.message_count, board.last_seq) == (3, 3)
    text = prompt_text(server.requests[-1])
    assert "never call after 9 pm" in text and "He is 3 months old and loves the beach." in text
    assert server.requests[-1]["body"]["response_format"] == {"type": "json_object"}
    # Nothing new since: no request at all.
    assert llm.update_board(board, SOURCES, max_tokens=100) is board and len(server.requests) == 1


def test_board_failure_falls_back_to_the_rules(
    server: FakeOpenAI, llm: LLMSummarizer, failures_seen: list[str],
) -> None:
    server.queue.append(Reply(content=json.dumps({"key_facts": "not a list"})))
    board = llm.update_board(Board.empty(), SOURCES, max_tokens=100)
    assert board == ExtractiveSummarizer(COUNTER).update_board(Board.empty(), SOURCES, max_tokens=100)
    assert failures_seen == ["schema"] and llm.failures["schema"] == 1


def test_board_lines_written_as_objects_read_as_lines(server: FakeOpenAI, llm: LLMSummarizer) -> None:
    # Small models (Qwen2.5-0.5B here) write "Name: fact" as {"Name": …, "fact": …}.
    reply = {**BOARD_REPLY, "key_facts": [{"Name": "Caroline", "fact": "adopted a puppy named Oscar"}],
             "action_items": [{"who": "Caroline", "what": "buy a leash"}]}
    server.queue.append(Reply(content=json.dumps(reply)))
    board = llm.update_board(Board.empty(), SOURCES, max_tokens=100)
    assert llm.failures == {kind: 0 for kind in FAILURE_KINDS}
    assert board.texts("key_facts") == ["Caroline: adopted a puppy named Oscar"]
    assert board.action_items == ["Caroline: buy a leash"]
    server.queue.append(Reply(content=json.dumps({**BOARD_REPLY, "key_facts": [{"Name": "Caroline", "age": 3}]})))
    assert llm.update_board(Board.empty(), SOURCES, max_tokens=100) == \
        ExtractiveSummarizer(COUNTER).update_board(Board.empty(), SOURCES, max_tokens=100)
    assert llm.failures["schema"] == 1
