"""The OpenAI-compatible memory proxy: memory for any OpenAI client by changing its `base_url`.

Owns `POST /v1/chat/completions` and `GET /v1/models`. A chat request names its conversation (the
`X-Memctx-Conversation` header or `metadata.memctx_conversation`: a UUID, or an external id that is
created on first use), and may say where its memories come from (`X-Memctx-Scope`, else
MEMCTX_CONTEXT_SCOPE) and when it is asked (`X-Memctx-As-Of`, else now). The proxy stores the
history of the request that the conversation does not hold yet, replaces the request's history
with the working context for the model's token budget (with the client's system prompt, or none),
calls the configured upstream through the `openai` client with the caller's other parameters
(none configured: 503, which clients are told not to retry), and, once the upstream has replied,
stores the user's turn and the reply together (tool calls as `tool_call` blocks) and answers with
the upstream's response as it came: JSON or SSE bytes, or the upstream's error status and body.
A call the upstream fails stores no turn: a retry, the client's own or the app's later, sends and
stores it once (with an `Idempotency-Key`, a completed one gets the stored reply). The proxy's own
refusals come in OpenAI's error shape (api.openai_errors). Everything it reads or writes goes
through the caller's row-level-security scoped app. It does not build contexts (memctx.assemble)
or decide formats (api.chat_format).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from contextlib import ExitStack
from dataclasses import replace
from typing import Annotated, Any, Callable, Iterator, Literal
from uuid import UUID

import openai
from fastapi import APIRouter, FastAPI, Header, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from memctx.api import shadow
from memctx.api.chat_format import (ChatRequest, StreamReply, Turn, completion_as_stream, message_key, reply_message,
                             split_turn, to_new_message, unstored)
from memctx.api.deps import CallerDep, SettingsDep
from memctx.api.errors import field_error
from memctx.api.observe import UPSTREAM_DURATION, UPSTREAM_ERRORS, record_context
from memctx.api.openai_errors import OpenAIErrors, ProxyError
from memctx.api.schemas import ConversationName, Timestamp
from memctx.assemble import WorkingContext, asked_at, assembler_for
from memctx.auth import Caller
from memctx.config import Settings
from memctx.store import PreparedMessage
from memctx.store.requests import IdempotencyKey, LoggedRequest, claim_key, complete_key

log = logging.getLogger("memctx.api.proxy")

router = APIRouter(tags=["proxy"], route_class=OpenAIErrors)

NO_UPSTREAM = ("the proxy has no upstream: set MEMCTX_UPSTREAM_BASE_URL to an OpenAI-compatible server "
               "(usually https://api.openai.com/v1) and MEMCTX_UPSTREAM_API_KEY")
MAX_CONVERSATION_NAME = 1000  # as api.schemas.ConversationName
IdempotencyKeyHeader = Annotated[str | None, Header(min_length=1, max_length=255,
                                                    description="a retry with the same key stores nothing twice")]
ConversationHeader = Annotated[ConversationName | None, Header(
    alias="X-Memctx-Conversation", description="the conversation: its UUID, or your external id (created on first use)")]
ScopeHeader = Annotated[Literal["conversation", "user"] | None, Header(
    alias="X-Memctx-Scope", description="memories from all of your conversations (user) or this one's "
                                        "(conversation); left out, MEMCTX_CONTEXT_SCOPE (user by default)")]
AsOfHeader = Annotated[Timestamp | None, Header(
    alias="X-Memctx-As-Of", description="the moment the message is asked (ISO 8601), for a replay or an "
                                        "evaluation; left out, the moment of the request")]


def make_upstream(settings: Settings) -> openai.OpenAI | None:
    """The upstream client, None when none is configured; no retries of its own (the caller's
    client retries, with its key)."""
    if not settings.upstream_base_url:
        return None
    key = settings.upstream_api_key.get_secret_value() if settings.upstream_api_key else "unset"
    return openai.OpenAI(base_url=settings.upstream_base_url, api_key=key, timeout=settings.upstream_timeout_s,
                         max_retries=0)


def install(app: FastAPI, settings: Settings) -> None:
    """Add the proxy's routes, with its upstream client, to the API."""
    app.state.upstream = make_upstream(settings)
    app.include_router(router)


def _upstream(request: Request) -> openai.OpenAI:
    """The configured upstream; without one, the proxy answers 503 before it reads or stores anything
    (it never guesses a server to send the caller's messages to), with `x-should-retry: false`:
    the OpenAI SDKs then do not retry what only a setting can fix."""
    upstream = request.app.state.upstream
    if upstream is None:
        raise ProxyError(503, NO_UPSTREAM, "no_upstream", {"x-should-retry": "false"})
    return upstream


@router.get("/v1/models")
def models(request: Request, who: CallerDep) -> Response:
    """The upstream's model list, as it answers it."""
    try:
        raw = _upstream(request).models.with_raw_response.list()
    except openai.APIError as exc:
        return _upstream_failure(exc, stream=False)
    return Response(raw.http_response.content, raw.http_response.status_code,
                    media_type=raw.http_response.headers.get("content-type"))


@router.post("/v1/chat/completions")
def chat_completions(body: ChatRequest, request: Request, who: CallerDep, settings: SettingsDep, raw: shadow.RawBody,
                     conversation: ConversationHeader = None, idempotency_key: IdempotencyKeyHeader = None,
                     scope: ScopeHeader = None, as_of: AsOfHeader = None, mode: shadow.ModeHeader = None) -> Response:
    """A chat completion with the user's memory: the request's history is replaced by the working
    context for the model's budget, and the messages memctx has not stored yet and the reply are
    stored once the upstream has replied. In shadow mode (api/shadow.py) the upstream gets the
    client's request as it came, and that context is recorded instead."""
    asked = asked_at(as_of)
    upstream = _upstream(request)
    params = body.model_dump(exclude_unset=True)
    name = conversation or (body.metadata or {}).get("memctx_conversation")
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_CONVERSATION_NAME:
        field_error(["header", "X-Memctx-Conversation"],
                    "name the conversation (1 to 1000 characters): the X-Memctx-Conversation header or "
                    "metadata.memctx_conversation")
    turn = split_turn(params["messages"])
    sent = who.app.store.prepare([to_new_message(m) for m in turn.talk])
    conv = _conversation(who, name)
    if turn.query_index:  # the client's history memctx has not stored comes first, then the context
        with who.app.pool.connection() as conn:
            _store_unstored(who, conv, sent[:turn.query_index], conn)
    budget = settings.proxy_token_budgets.get(body.model, settings.proxy_default_token_budget)
    tail_tokens = who.app.counter.count(json.dumps(turn.tail)) if turn.tail else 0
    assembler = assembler_for(who.app)
    # No system prompt of memctx's: a client that sends none gets none, but for the day's line a
    # context carrying memories says (within the budget, and weighed against the history).
    wc = assembler.get_working_context(who.user_id, conv, turn.query_text, budget - tail_tokens,
                                       system_prompt=turn.system_prompt or "", now=asked,
                                       options=assembler.options if scope is None
                                       else replace(assembler.options, scope=scope))
    # The same request streamed or not is the same request: a retry may ask for either shape.
    hashed = {k: v for k, v in params.items() if k not in ("stream", "stream_options")}
    request_hash = hashlib.sha256(json.dumps([str(conv), hashed], sort_keys=True, default=str).encode()).hexdigest()
    with who.app.pool.connection() as conn:
        key = claim_key(conn, user_id=who.user_id, key=idempotency_key, conversation_id=conv,
                        request_hash=request_hash, keep_hours=settings.idempotency_keep_hours) if idempotency_key else None
        if key is not None and key.request_hash != request_hash:
            field_error(["header", "Idempotency-Key"], "this key was used for another request")
        if key is not None and key.completed_at is not None:
            return _replay(key, stream=bool(body.stream))
    call = _Call(who, conv, wc, turn, body.model, idempotency_key, sent)
    messages = [*wc.messages[:-1], turn.query, *turn.tail]
    extra = _passed_through(params)
    if shadow.wanted(mode, who, conv, settings):  # the upstream gets the client's bytes; `messages` is recorded
        upstream = shadow.shadow_call(call, upstream, raw, request.headers.get("content-type", "application/json"),
                                      params["messages"], messages)
    if body.stream:
        return call.stream(upstream, messages, extra)
    return call.once(upstream, messages, extra)


def _conversation(who: Caller, name: str) -> UUID:
    """The caller's conversation by UUID or external id; a new external id creates it, an unknown
    UUID (perhaps another tenant's) is a 404."""
    try:
        UUID(name)
    except ValueError:  # an external id: get-or-create, one statement
        return who.app.store.create_conversation(who.user_id, external_id=name).id
    return who.app.store.find_conversation(who.user_id, name).id


def _store_unstored(who: Caller, conversation: UUID, sent: list[PreparedMessage], conn, *,
                    query_index: int | None = None) -> int | None:
    """Store the messages of `sent` the conversation does not hold yet, in order, once; the
    conversation stays locked meanwhile, so a retry running beside this one waits and then finds
    them stored. Returns the stored query's seq (when `query_index` names it)."""
    recent = who.app.store.last_messages(who.user_id, conversation, len(sent), conn=conn)
    aligned = unstored([message_key(p.message.role, p.message.blocks) for p in sent],
                       [message_key(m.role, m.content) for m in recent])
    stored = who.app.store.append_messages(who.user_id, conversation, sent[aligned.first_new:], embed=False,
                                           conn=conn) if aligned.first_new < len(sent) else []
    if query_index is None:
        return None
    if query_index >= aligned.first_new:
        return stored[query_index - aligned.first_new].seq
    at = aligned.stored_index(query_index)
    return recent[at].seq if at is not None and 0 <= at < len(recent) else None


def _passed_through(params: dict[str, Any]) -> dict[str, Any]:
    """The caller's parameters for the upstream: all but model, messages and stream, and the
    metadata without memctx's own key."""
    extra = {k: v for k, v in params.items() if k not in ("model", "messages", "stream")}
    metadata = {k: v for k, v in (extra.pop("metadata", None) or {}).items() if k != "memctx_conversation"}
    if metadata:
        extra["metadata"] = metadata
    return extra


def _replay(key: IdempotencyKey, *, stream: bool) -> Response:
    """The stored reply of a completed Idempotency-Key, in the shape the retry asked for."""
    if stream:
        return StreamingResponse(completion_as_stream(key.response or {}), media_type="text/event-stream")
    return JSONResponse(key.response)


def _upstream_failure(exc: openai.APIError, *, stream: bool) -> Response:
    """The upstream's error as it answered it; no answer at all is a 504 (timeout) or 502."""
    if isinstance(exc, openai.APIStatusError):
        UPSTREAM_ERRORS.labels(str(exc.status_code)).inc()
        return Response(exc.response.content, exc.status_code, media_type=exc.response.headers.get("content-type"))
    timeout = isinstance(exc, openai.APITimeoutError)
    UPSTREAM_ERRORS.labels("timeout" if timeout else "connection").inc()
    log.warning("upstream unreachable", extra={"fields": {"error": type(exc).__name__, "stream": stream}})
    return JSONResponse({"error": {"message": "the upstream did not answer" if timeout else "the upstream is unreachable",
                                   "type": "upstream_error", "code": "timeout" if timeout else "connection"}},
                        status_code=504 if timeout else 502)


class _Call:
    """One upstream call of a chat request, and what is recorded when it ends: with a reply, the
    user's turn (and the tool loop after it) and the reply, in one transaction; without one,
    nothing but the log row."""

    def __init__(self, who: Caller, conversation: UUID, wc: WorkingContext, turn: Turn, model: str,
                 idempotency_key: str | None, sent: list[PreparedMessage]) -> None:
        self.who, self.conversation, self.wc, self.turn = who, conversation, wc, turn
        self.model, self.idempotency_key, self.sent = model, idempotency_key, sent
        self.started = time.perf_counter()
        self.streamed = False
        self.kind: Literal["proxy", "shadow"] = "proxy"  # api.shadow makes it a shadow call
        self.on_logged: Callable[[Any, LoggedRequest], None] | None = None  # run beside the log row

    def once(self, upstream: openai.OpenAI, messages: list[dict], extra: dict[str, Any]) -> Response:
        try:
            raw = upstream.chat.completions.with_raw_response.create(model=self.model, messages=messages,
                                                                     extra_body=extra)
        except openai.APIError as exc:
            self._record(None, exc)
            return _upstream_failure(exc, stream=False)
        http = raw.http_response
        try:
            completion = http.json()
        except ValueError:  # not JSON: passed on as it came, nothing to store
            completion = None
        self._record(completion if isinstance(completion, dict) else None, None, status=http.status_code)
        return Response(http.content, http.status_code, media_type=http.headers.get("content-type"))

    def stream(self, upstream: openai.OpenAI, messages: list[dict], extra: dict[str, Any]) -> Response:
        self.streamed = True
        stack = ExitStack()
        try:
            http = stack.enter_context(upstream.chat.completions.with_streaming_response.create(
                model=self.model, messages=messages, stream=True, extra_body=extra)).http_response
        except openai.APIError as exc:
            stack.close()
            self._record(None, exc)
            return _upstream_failure(exc, stream=True)

        def relay() -> Iterator[bytes]:
            # The reply is stored before the chunk holding [DONE] is passed on: a client that has
            # read the whole stream finds it stored.
            reply, recorded = StreamReply(), False
            with stack:
                for chunk in http.iter_bytes():
                    reply.feed(chunk)
                    if reply.done and not recorded:
                        self._record(reply.completion(), None, status=http.status_code)
                        recorded = True
                    yield chunk
            if not recorded:  # the stream ended without [DONE]: nothing to store, the call is logged
                self._record(None, None, status=http.status_code)

        return StreamingResponse(relay(), http.status_code, media_type=http.headers.get("content-type"))

    def _record(self, completion: dict[str, Any] | None, error: openai.APIError | None, *,
                status: int | None = None) -> None:
        """Store the reply (once per Idempotency-Key) and log the call, in one transaction."""
        elapsed = time.perf_counter() - self.started
        UPSTREAM_DURATION.labels("true" if self.streamed else "false").observe(elapsed)
        if isinstance(error, openai.APIStatusError):
            status = error.status_code
        elif error is not None:
            status = 504 if isinstance(error, openai.APITimeoutError) else 502
        who = self.who
        with who.app.pool.connection() as conn:
            reply = reply_message(completion) if completion else None
            first = reply is not None and (self.idempotency_key is None or complete_key(
                conn, user_id=who.user_id, key=self.idempotency_key, response=completion))
            query_seq = None
            if first:
                query_seq = _store_unstored(who, self.conversation, self.sent, conn, query_index=self.turn.query_index)
                who.app.store.append_messages(who.user_id, self.conversation, [reply], embed=False, conn=conn)
            logged = record_context(who, self.conversation, self.wc, self.kind, query_stored_at=query_seq,
                                    model=self.model, timings_ms={"upstream": round(elapsed * 1000, 3)},
                                    upstream_status=status, conn=conn)
            if self.on_logged is not None:
                self.on_logged(conn, logged)
