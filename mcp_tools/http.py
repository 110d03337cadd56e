"""The streamable-HTTP transport: every request authenticated like the API's, at `/mcp`.

Owns: the `/mcp` route and its lifespan (the SDK's session manager, started afresh each time the
hosting app starts), and the bearer check in front of it: the same API keys and Supabase JWTs as
`/v1` (`memctx.auth.Authenticator`), a 401 otherwise. The caller rides in the ASGI scope as the
SDK's `AuthenticatedUser`, so a session stays with the user who opened it; the bound conversation
is the request's `X-Memctx-Conversation` header. `router` is what `memctx serve` includes
(the `memctx.routers` entry point);
`serve_app` is the factory of `memctx mcp --http`.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any, AsyncIterator
from uuid import UUID

import anyio.to_thread
from fastapi import APIRouter, FastAPI
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from memctx.mcp_tools.binding import Binding
from memctx.mcp_tools.server import build_server
from memctx import logs
from memctx.app import App, open_app
from memctx.auth import Authenticator, Caller, Unauthorized, bearer
from memctx.config import Settings

PATH = "/mcp"
ROUTE = SimpleNamespace(path=PATH)
CONVERSATION_HEADER = "x-memctx-conversation"
# Every request must carry a bearer credential, which a page rebinding a name to this host does not
# have; the SDK's Host check would refuse a server reached by any name other than localhost.
SECURITY = TransportSecuritySettings(enable_dns_rebinding_protection=False)


class McpEndpoint:
    """The ASGI app at /mcp: the bearer check, then the SDK's session manager."""

    def __init__(self, app: App, settings: Settings) -> None:
        self.app = app
        self.authenticator = Authenticator(app, settings)
        self.server: MCPServer = build_server(self.bind)

    def bind(self, ctx: Context) -> Binding:
        request = ctx.request_context.request
        assert isinstance(request, Request)  # the streamable-HTTP transport always attaches it
        user = UUID(request.scope["user"].access_token.subject)
        return Binding(Caller(user, self.app.for_user(user)), request.headers.get(CONVERSATION_HEADER) or None)

    @asynccontextmanager
    async def lifespan(self, _: Any) -> AsyncIterator[None]:
        self.server.streamable_http_app(transport_security=SECURITY)  # a fresh session manager per run
        async with self.server.session_manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Named in the scope as FastAPI's own routes name themselves (the router updates the scope
        # in place): the API's request metrics and logs label this traffic `/mcp`, not "unmatched".
        scope["route"] = ROUTE
        try:
            credential = bearer(Request(scope).headers.get("authorization"))
            user = await anyio.to_thread.run_sync(self.authenticator.user, credential)
        except Unauthorized:
            await JSONResponse({"detail": "invalid or missing credentials"}, status_code=401,
                               headers={"WWW-Authenticate": "Bearer"})(scope, receive, send)
            return
        token = AccessToken(token=credential, client_id=str(user), scopes=[], subject=str(user))
        await self.server.session_manager.handle_request({**scope, "user": AuthenticatedUser(token)}, receive, send)


def router(app: App, settings: Settings) -> APIRouter:
    """`/mcp` and the lifespan that runs its sessions, for a FastAPI app to include."""
    endpoint = McpEndpoint(app, settings)
    mcp_router = APIRouter(lifespan=endpoint.lifespan)
    mcp_router.routes.append(Route(PATH, endpoint=endpoint, include_in_schema=False))
    return mcp_router


def serve_app() -> FastAPI:
    """uvicorn's factory for `memctx mcp --http`: only /mcp, settings from MEMCTX_* variables."""
    settings = Settings()
    memctx_app = open_app(settings)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        memctx_app.close()

    http_app = FastAPI(lifespan=lifespan, openapi_url=None, docs_url=None, redoc_url=None)
    http_app.include_router(router(memctx_app, settings))
    # One JSON object a line, uvicorn's too, as `memctx serve` writes (set once the app is built).
    logs.configure(settings.log_level, loggers=("memctx", "uvicorn", "uvicorn.error"))
    return http_app
