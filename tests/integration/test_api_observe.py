"""What operators see of the API: /metrics after real requests, and JSON log lines that carry the
request id and never a message's or query's text at info level."""

from __future__ import annotations

import io
import json
import logging
import time
import uuid

import pytest

from memctx.api.observe import configure_logging
from api_support import client
from memctx.logs import QUIET_LOGGERS
from memctx.models import NewMessage

SECRET_MESSAGE = "my locker code is 8812-SECRET"
SECRET_QUERY = "what is the QUERY-SECRET locker code?"


@pytest.fixture
def alice(app):
    user = uuid.uuid4()
    conv = app.store.create_conversation(user, external_id="gym")
    app.store.append_messages(user, conv.id, [NewMessage.build("user", SECRET_MESSAGE),
                                              NewMessage.build("assistant", "Noted.")])
    return user


@pytest.fixture
def log_lines():
    """The API's log, configured as `memctx serve` configures it, into a buffer."""
    names = ("", "memctx", "uvicorn", "uvicorn.error", *QUIET_LOGGERS)  # "": the root logger
    saved = {n: (logging.getLogger(n).handlers[:], logging.getLogger(n).level, logging.getLogger(n).propagate)
             for n in names}
    buffer = io.StringIO()
    configure_logging("INFO", buffer)
    yield lambda: [json.loads(line) for line in buffer.getvalue().splitlines()]
    for name, (handlers, level, propagate) in saved.items():
        logger = logging.getLogger(name)
        logger.handlers[:], logger.level, logger.propagate = handlers, level, propagate


def test_metrics_show_request_latency_tokens_and_retrieval_stages(api_server, api_key_for, alice):
    with client(api_server, api_key_for(alice)) as http:
        assert http.post("/v1/conversations/gym/context", json={"query": SECRET_QUERY, "token_budget": 800}).status_code == 200
        assert http.get("/v1/conversations/nope").status_code == 404
        mcp = http.post("/mcp", headers={"Accept": "application/json, text/event-stream"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        assert mcp.status_code == 200
        deadline = time.monotonic() + 10  # a request is counted once its response has gone out
        while 'route="/mcp"' not in (text := http.get("/metrics").text) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert 'memctx_http_request_duration_seconds_count{method="POST",route="/mcp",status="200"}' in text
    assert 'memctx_http_request_duration_seconds_count{method="POST",route="/v1/conversations/{conversation}/context",status="200"}' in text
    assert 'memctx_http_request_duration_seconds_count{method="GET",route="/v1/conversations/{conversation}",status="404"}' in text
    assert 'memctx_context_tokens_used_count{kind="context"}' in text
    assert 'memctx_context_tokens_saved_count{kind="context"}' in text
    for stage in ("current_sql", "total"):  # an empty conversation fits: its history needs no search
        assert f'memctx_retrieval_duration_seconds_count{{stage="{stage}"}}' in text
    assert "memctx_outbox_backlog" in text  # the worker's metrics, from the same registry
    assert "memctx_proxy_upstream_duration_seconds" in text


def test_log_lines_are_json_with_the_request_id_and_no_content(api_server, api_key_for, alice, log_lines):
    key = api_key_for(alice)
    with client(api_server, key) as http:
        given = http.post("/v1/conversations/gym/context", json={"query": SECRET_QUERY, "token_budget": 800},
                          headers={"X-Request-Id": "req-from-client-1"})
        fresh = http.post("/v1/conversations/gym/messages", json={"messages": [{"role": "user", "content": SECRET_MESSAGE}]})
    assert given.headers["x-request-id"] == "req-from-client-1"
    assert len(fresh.headers["x-request-id"]) == 32
    # The request's line is written once its response is sent, so it can land just after the answer.
    deadline = time.monotonic() + 10
    while fresh.headers["x-request-id"] not in json.dumps(lines := log_lines()) and time.monotonic() < deadline:
        time.sleep(0.05)
    by_request = {}
    for line in lines:
        by_request.setdefault(line.get("request_id"), []).append(line)
    assert {line["msg"] for line in by_request["req-from-client-1"]} == {"context", "request"}
    context = next(line for line in by_request["req-from-client-1"] if line["msg"] == "context")
    assert context["tokens_used"] > 0 and context["kind"] == "context"
    request = next(line for line in by_request[fresh.headers["x-request-id"]] if line["msg"] == "request")
    assert (request["method"], request["route"], request["status"]) == ("POST", "/v1/conversations/{conversation}/messages", 201)
    everything = json.dumps(lines)
    assert "SECRET" not in everything and "locker" not in everything
    assert key not in everything
