"""What the API tells its operators: request ids, structured JSON logs, Prometheus metrics, the log.

Owns: the request middleware (a request id from `X-Request-Id` or a new one, echoed back and on
every log line of the request; one JSON line per request with method, route, status and latency;
request latency by route and status), the API's metrics in the worker's registry
(`memctx.metrics.REGISTRY`, so `/metrics` serves both), the `/metrics` route, and
`record_context`: one `context_requests` row per context or proxy call, as the caller, with its
token and latency metrics. Logs at info never carry message contents, queries or credentials.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from contextlib import nullcontext
from contextvars import ContextVar
from typing import IO, Literal, Mapping
from uuid import UUID

import psycopg
from fastapi import APIRouter, FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Histogram, generate_latest

from memctx import logs
from memctx.assemble.types import WorkingContext
from memctx.auth import Caller
from memctx.metrics import REGISTRY
from memctx.store import UnknownConversation
from memctx.store.requests import LoggedRequest, log_request

log = logging.getLogger("memctx.api")

REQUEST_ID: ContextVar[str | None] = ContextVar("memctx_request_id", default=None)
_CLIENT_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")

_TOKEN_BUCKETS = (100, 250, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000)
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

HTTP_REQUEST_DURATION = Histogram(
    "memctx_http_request_duration_seconds", "API request latency, to the last byte of the response.",
    ["method", "route", "status"], registry=REGISTRY, buckets=_LATENCY_BUCKETS)
CONTEXT_TOKENS_USED = Histogram(
    "memctx_context_tokens_used", "Tokens of each working context served, by kind (context, proxy).",
    ["kind"], registry=REGISTRY, buckets=_TOKEN_BUCKETS)
CONTEXT_TOKENS_SAVED = Histogram(
    "memctx_context_tokens_saved", "Tokens each working context saved against sending the whole conversation.",
    ["kind"], registry=REGISTRY, buckets=(0, *_TOKEN_BUCKETS))
RETRIEVAL_DURATION = Histogram(
    "memctx_retrieval_duration_seconds", "Working-context latency by stage (current_sql, search, total).",
    ["stage"], registry=REGISTRY, buckets=_LATENCY_BUCKETS)
UPSTREAM_DURATION = Histogram(
    "memctx_proxy_upstream_duration_seconds", "The proxy's upstream call, to its last byte.",
    ["stream"], registry=REGISTRY, buckets=_LATENCY_BUCKETS)
UPSTREAM_ERRORS = Counter(
    "memctx_proxy_upstream_errors", "Upstream calls that failed, by kind (the HTTP status, timeout, connection).",
    ["kind"], registry=REGISTRY)


# Logs --------------------------------------------------------------------------------------------
def _request_context() -> dict[str, str]:
    request_id = REQUEST_ID.get()
    return {"request_id": request_id} if request_id else {}


def configure_logging(level: str = "INFO", stream: IO[str] | None = None) -> None:
    """Every log line of the process one JSON object on `stream` (stderr), with the request id of
    the request it belongs to (memctx.logs), uvicorn's lines included (an entry point calls this
    once the app is built: a library may have set up its own handler by then)."""
    logs.configure(level, stream, context=_request_context, loggers=("memctx", "uvicorn", "uvicorn.error"))
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)  # the middleware logs every request


# Middleware --------------------------------------------------------------------------------------
class RequestObserver:
    """ASGI middleware: request id, latency by route and status, one log line per request.

    Pure ASGI rather than BaseHTTPMiddleware, so that a streamed response is timed to its end and
    passes through without buffering."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        request_id = given if _CLIENT_REQUEST_ID.match(given) else uuid.uuid4().hex
        token = REQUEST_ID.set(request_id)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"x-request-id", request_id.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            HTTP_REQUEST_DURATION.labels(scope["method"], route, str(status)).observe(elapsed)
            log.info("request", extra={"fields": {"method": scope["method"], "route": route, "status": status,
                                                  "duration_ms": round(elapsed * 1000, 2)}})
            REQUEST_ID.reset(token)


metrics_router = APIRouter()


@metrics_router.get("/metrics", include_in_schema=False)
def metrics() -> Response:
    """Prometheus metrics: the API's and the library's (one registry)."""
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)


def install(app: FastAPI) -> None:
    """Add the middleware and the /metrics route to the API."""
    app.add_middleware(RequestObserver)
    app.include_router(metrics_router)


# The context request log -------------------------------------------------------------------------
def record_context(caller: Caller, conversation_id: UUID, wc: WorkingContext,
                   kind: Literal["context", "proxy", "shadow"], *,
                   query_stored_at: int | None = None, model: str | None = None,
                   timings_ms: Mapping[str, float] | None = None, upstream_status: int | None = None,
                   conn: psycopg.Connection | None = None) -> LoggedRequest:
    """Log one context or proxy call as the caller (RLS), and observe its tokens and latencies.

    Given `conn` (the caller's, in a transaction), the row joins that transaction."""
    app = caller.app
    entry = wc.log_entry(app.counter, user_id=caller.user_id, conversation_id=conversation_id, kind=kind,
                         query_stored_at=query_stored_at, model=model, timings_ms=timings_ms,
                         upstream_status=upstream_status)
    try:
        with nullcontext(conn) if conn is not None else app.pool.connection() as tx:
            logged = log_request(tx, entry, retention_days=app.settings.request_log_retention_days,
                                 own_transaction=conn is None)
    except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ForeignKeyViolation):
        # row-level security admits a log row only for a conversation of the caller's: this one was
        # deleted while its context was built
        raise UnknownConversation(conversation_id) from None
    CONTEXT_TOKENS_USED.labels(kind).observe(logged.tokens_used)
    CONTEXT_TOKENS_SAVED.labels(kind).observe(logged.tokens_saved)
    for stage, ms in wc.timings_ms.items():
        RETRIEVAL_DURATION.labels(stage).observe(ms / 1000)
    log.info("context", extra={"fields": {"kind": kind, "conversation_id": str(conversation_id),
                                          "token_budget": wc.budget, "tokens_used": logged.tokens_used,
                                          "tokens_saved": logged.tokens_saved, "sources": entry.sources}})
    return logged
