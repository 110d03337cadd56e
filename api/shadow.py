"""The proxy's shadow run: the upstream gets the client's own request, byte for byte, while memctx
stores the turn, builds the context it would have sent, and records the two side by side.

Owns: which mode a chat request runs in (its `X-Memctx-Mode` header, else the conversation's own
mode, else MEMCTX_PROXY_MODE), the upstream a shadow call talks to (the proxy's client, sending
the client's request body as it came instead of the working context), and the comparison
recorded beside the call's request-log row (kind 'shadow'): the client's tokens, the context's
tokens, the context itself (the messages live mode sends in the same place) and how many of the
client's history messages the context kept whole.

Everything but the upstream's request is the live call's own path (api/proxy.py): the context is
built exactly as live mode builds it, and once the upstream replies the turn and the reply are
stored as live mode stores them, so switching a conversation to live changes only what the
upstream receives, and its history is already stored. The upstream's answer comes back as it came.
"""

from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace
from typing import Annotated, Any, Iterator, Mapping, Sequence

import httpx2
import openai
from fastapi import Depends, Header, Request

from memctx.api.chat_format import Turn, text_of
from memctx.auth import Caller
from memctx.config import Settings
from memctx.store import shadow as records
from memctx.store.requests import LoggedRequest
from memctx.tokens import PER_MESSAGE, REPLY_PRIMING, TokenCounter

ModeHeader = Annotated[records.ProxyMode | None, Header(
    alias="X-Memctx-Mode", description="'shadow': the upstream gets your request as you sent it while memctx "
                                       "records the context it would have sent; 'live': the working context")]


async def raw_body(request: Request) -> bytes:
    """The request's body as the client sent it (read once: FastAPI parsed the same bytes)."""
    return await request.body()


RawBody = Annotated[bytes, Depends(raw_body)]


def wanted(header: records.ProxyMode | None, who: Caller, conversation, settings: Settings) -> bool:
    """Whether this request runs in shadow mode: its header, else its conversation's mode, else
    the server's."""
    mode = header or records.proxy_mode(who.app.pool, who.user_id, conversation) or settings.proxy_mode
    return mode == "shadow"


def shadow_call(call, upstream: openai.OpenAI, raw: bytes, content_type: str,
                client_messages: Sequence[Mapping[str, Any]], context: list[dict[str, Any]]) -> "ClientBytes":
    """Turn the proxy's call into a shadow call: its log row is of kind 'shadow' with the comparison
    beside it, and the upstream it is given sends the client's bytes. Returns that upstream."""
    who = call.who
    comparison = compare(who.app.counter, call.turn, client_messages, context)

    def beside(conn, logged: LoggedRequest) -> None:
        records.record(conn, request_id=logged.id, user_id=who.user_id, conversation_id=call.conversation,
                       shadow=comparison)

    call.kind, call.on_logged = "shadow", beside
    return ClientBytes(upstream, raw, content_type)


class ClientBytes:
    """An upstream for the proxy's call that sends the client's request body as it came, whatever
    the call asks to send: the same openai client, its key and timeout, the same answers and
    errors (openai.APIStatusError for the upstream's own error status, as in live mode)."""

    def __init__(self, upstream: openai.OpenAI, raw: bytes, content_type: str) -> None:
        self.upstream, self.raw = upstream, raw
        self.options = {"headers": {"Content-Type": content_type}}
        completions = SimpleNamespace(with_raw_response=SimpleNamespace(create=self._once),
                                      with_streaming_response=SimpleNamespace(create=self._stream))
        self.chat = SimpleNamespace(completions=completions)

    def _once(self, **_: Any) -> SimpleNamespace:
        http = self.upstream.post("/chat/completions", cast_to=httpx2.Response, content=self.raw,
                                  options=self.options)
        return SimpleNamespace(http_response=http)

    @contextmanager
    def _stream(self, **_: Any) -> Iterator[SimpleNamespace]:
        http = self.upstream.post("/chat/completions", cast_to=httpx2.Response, content=self.raw,
                                  options=self.options, stream=True)
        try:
            yield SimpleNamespace(http_response=http)
        finally:
            http.close()


def compare(counter: TokenCounter, turn: Turn, client_messages: Sequence[Mapping[str, Any]],
            context: Sequence[Mapping[str, Any]]) -> records.ShadowRecord:
    """What the client sent against what memctx would have sent in its place: both counted the
    same way, and the client's history messages (those before its last user message that have
    text) that the context holds whole, in the messages memctx wrote before the query."""
    written = "\n".join(text_of(m.get("content")) for m in context[:len(context) - 1 - len(turn.tail)])
    history = [text_of(m.get("content")).strip() for m in turn.talk[:turn.query_index]]
    history = [h for h in history if h]
    return records.ShadowRecord(client_tokens=chat_tokens(counter, client_messages),
                                context_tokens=chat_tokens(counter, context), history_messages=len(history),
                                history_kept=sum(1 for h in history if h in written), context=list(context))


def chat_tokens(counter: TokenCounter, messages: Sequence[Mapping[str, Any]]) -> int:
    """The tokens of chat messages, as memctx counts a context's: each message's overhead, role, text
    and tool calls, and the reply's priming."""
    total = REPLY_PRIMING
    for m in messages:
        total += PER_MESSAGE + counter.count(str(m.get("role", ""))) + counter.count(text_of(m.get("content")))
        for call in m.get("tool_calls") or ():
            function = call.get("function") or {}
            total += counter.count(str(function.get("name") or "")) + counter.count(str(function.get("arguments") or ""))
    return total
