"""What a request must pass before its body is read: a credential, and a size.

Owns: an ASGI middleware in front of the app. A request with a body to an authenticated route
(`/v1/…`, `/mcp`) is answered 401 unless its bearer credential is valid, before a byte of the
body is read; any body over `api_max_body_bytes` is a 413: at once when its Content-Length says
so, as soon as it passes the limit when it is streamed. So an anonymous or oversized upload costs
the server neither the memory nor the parsing. The user it found is left in the request's state for the
`caller` dependency (api/deps.py), so a credential is looked up once per request.
"""

from __future__ import annotations

import json

import anyio
from starlette.routing import Match

from memctx.api import openai_errors
from memctx.api.errors import DATABASE_UNAVAILABLE, unavailable
from memctx.auth import Unauthorized, bearer

BODY_METHODS = {"POST", "PUT", "PATCH"}
AUTHENTICATED = ("/v1/", "/mcp")


class Gate:
    def __init__(self, app, *, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if scope["path"].startswith(AUTHENTICATED):
            openai = scope["path"] in openai_errors.PATHS
            try:
                authenticated = await _authenticated(scope, headers)
            except DATABASE_UNAVAILABLE as exc:  # answered here: the handler would wait for a connection again
                _name_route(scope)
                status, detail, headers = unavailable(exc)
                await _answer(send, status, detail, [(k.lower().encode(), v.encode()) for k, v in headers.items()],
                              openai=openai)
                return
            if not authenticated:
                _name_route(scope)
                await _answer(send, 401, "invalid or missing credentials", [(b"www-authenticate", b"Bearer")],
                              openai=openai)
                return
        length = headers.get(b"content-length", b"")
        if length.isdigit() and int(length) > self.max_body_bytes:
            _name_route(scope)
            await _answer(send, 413, self._too_large(), openai=scope["path"] in openai_errors.PATHS)
            return
        received, started, refused = 0, False, False

        async def counted_receive():
            nonlocal received, started, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    # Answered here: the app may wrap any error of reading the body as its own 400.
                    # To the app the client has gone, and whatever it answers is dropped.
                    refused = True
                    if not started:
                        started = True
                        await _answer(send, 413, self._too_large(), openai=scope["path"] in openai_errors.PATHS)
                    return {"type": "http.disconnect"}
            return message

        async def watched_send(message) -> None:
            nonlocal started
            if refused:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, counted_receive, watched_send)

    def _too_large(self) -> str:
        return f"the request body is over {self.max_body_bytes} bytes (MEMCTX_API_MAX_BODY_BYTES)"


def _name_route(scope) -> None:
    """Put the route a refused request was for in its scope, as routing would have: the request
    metrics label the refusal by its route, not "unmatched"."""
    route = _route_for(scope["app"].router.routes, scope)
    if route is not None:
        scope["route"] = route


def _route_for(routes, scope):
    for route in routes:
        included = getattr(route, "original_router", None)  # FastAPI keeps an included router whole
        if included is not None:
            found = _route_for(included.routes, scope)
            if found is not None:
                return found
        elif route.matches(scope)[0] == Match.FULL:
            return route
    return None


# The request state's key for (credential, user) as the gate found them.
CHECKED = "memctx_checked_credential"


async def _authenticated(scope, headers: dict[bytes, bytes]) -> bool:
    try:
        credential = bearer(headers.get(b"authorization", b"").decode("latin-1"))
    except Unauthorized:
        return False
    authenticator = scope["app"].state.authenticator
    try:  # an API key is a database lookup: off the event loop, as the handlers' own check runs
        user = await anyio.to_thread.run_sync(authenticator.user, credential)
    except Unauthorized:
        return False
    except DATABASE_UNAVAILABLE:
        raise
    except Exception:  # anything else: the handler's own check meets it and answers it
        return True
    scope.setdefault("state", {})[CHECKED] = (credential, user)
    return True


async def _answer(send, status: int, detail: str, headers: list[tuple[bytes, bytes]] = (), *,
                  openai: bool = False) -> None:
    """The refusal; in OpenAI's error shape on the proxy's paths (`openai`)."""
    body = openai_errors.answer_body(status, detail) if openai else json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close"), *headers]})
    await send({"type": "http.response.body", "body": body})
