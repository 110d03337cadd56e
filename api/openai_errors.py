"""The proxy's own errors in OpenAI's shape, so an OpenAI client shows their reason.

Owns: `{"error": {"message", "type", "param", "code"}}` for what the proxy's routes refuse
(`OpenAIErrors`, their route class) and for what the gate refuses on their paths before routing
(`answer_body`). The message is the API's own answer's, which api/errors.py writes; only the shape
changes here. An upstream's own error passes through as the upstream sent it (api/proxy.py).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable, Coroutine

from fastapi import Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

log = logging.getLogger("memctx.api.proxy")

# The OpenAI-compatible routes: their refusals take this shape.
PATHS = ("/v1/chat/completions", "/v1/models")

# Status → (type, code), as OpenAI names them.
KINDS = {400: ("invalid_request_error", "invalid_request"), 401: ("authentication_error", "invalid_api_key"),
         404: ("not_found_error", "not_found"), 413: ("invalid_request_error", "request_too_large"),
         422: ("invalid_request_error", "invalid_value"), 429: ("rate_limit_error", "rate_limited"),
         503: ("server_error", "unavailable")}


class ProxyError(Exception):
    """A refusal of the proxy's own, with its code (e.g. `no_upstream`) and headers."""

    def __init__(self, status: int, message: str, code: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, headers or {}


def error(status: int, message: str, *, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    kind, default_code = KINDS.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
    return {"error": {"message": message, "type": kind, "param": param, "code": code or default_code}}


def answer_body(status: int, detail: str) -> bytes:
    """The gate's refusal (401, 413) of a request to one of PATHS."""
    return json.dumps(error(status, detail)).encode()


def _param(errors: list[dict[str, Any]]) -> str | None:
    """The field a 422 names, as OpenAI's `param` does ("messages", "X-Memctx-Conversation")."""
    if not errors:
        return None
    loc = [str(part) for part in errors[0].get("loc", [])]
    return ".".join(loc[1:] if loc and loc[0] in ("body", "header", "query") else loc) or None


def reshaped(answer: Response) -> Response:
    """The API's `{"detail": …}` answer in OpenAI's shape, with its status and headers."""
    try:
        body = json.loads(answer.body)
    except ValueError:
        body = {"detail": answer.body.decode("utf-8", "replace")}
    detail = body.get("detail") if isinstance(body, dict) else None
    message = detail if isinstance(detail, str) else "the request was refused"
    headers = {k: v for k, v in answer.headers.items() if k.lower() not in ("content-length", "content-type")}
    code = "conversation_not_found" if answer.status_code == 404 and "conversation" in message else None
    return JSONResponse(error(answer.status_code, message, code=code, param=_param(body.get("errors") or [])),
                        status_code=answer.status_code, headers=headers)


class OpenAIErrors(APIRoute):
    """A route whose refusals (its dependencies', its body's validation, its handler's) come in
    OpenAI's shape; the answer is the one the app's exception handlers give, reshaped."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handle(request)
            except ProxyError as exc:
                return JSONResponse(error(exc.status, exc.message, code=exc.code), status_code=exc.status,
                                    headers=exc.headers)
            except Exception as exc:
                handler = next((request.app.exception_handlers[t] for t in type(exc).__mro__
                                if t in request.app.exception_handlers), None)
                if handler is None:
                    log.exception("proxy request failed")
                    return JSONResponse(error(500, "the proxy failed to handle the request"), status_code=500)
                return reshaped(await handler(request, exc))

        return route
