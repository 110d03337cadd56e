"""The HTTP app: routes under /v1, the bearer authenticator, memctx's errors as 4xx answers.

Owns: assembling FastAPI around one memctx `App` (the owner's pool, used only to resolve
credentials and for /readyz; every handler works through `Caller.app`, scoped by RLS), with the
routers other doors plug in through `memctx.doors` (the MCP tools at /mcp), never importing them.
`serve_app` is the factory `memctx serve` hands to uvicorn (one App per worker process).
"""

from __future__ import annotations

import logging
import threading
from contextlib import asynccontextmanager

from fastapi import FastAPI

from memctx.api import errors, observe, proxy, ui
from memctx.api.gate import Gate
from memctx.api.routes import ROUTERS
from memctx import doors
from memctx.app import App, open_app
from memctx.auth import Authenticator
from memctx.config import Settings


def create_app(app: App, settings: Settings, *, close_on_shutdown: bool = False) -> FastAPI:
    """The API over `app`; with close_on_shutdown, closing `app` when the server stops."""

    @asynccontextmanager
    async def lifespan(running: FastAPI):
        # The embedder loads beside the server starting: /healthz answers meanwhile, /readyz
        # only once it has loaded, and the first context call does not pay for it.
        loading = threading.Thread(target=_load_embedder, args=(app, running.state.embedder_loaded),
                                   name="memctx-embedder-load", daemon=True)
        loading.start()
        yield
        loading.join(60)  # a process that exits while onnxruntime loads in a daemon thread aborts
        if running.state.upstream is not None:
            running.state.upstream.close()  # the proxy's HTTP connections
        if close_on_shutdown:
            app.close()

    api = FastAPI(title="memctx", version="1", lifespan=lifespan,
                  description="Memory and context for LLM chat apps. Send `Authorization: Bearer <API key or "
                              "Supabase JWT>`; every query runs as you under row-level security.")
    api.state.memctx = app
    api.state.embedder_loaded = threading.Event()
    api.state.settings = settings
    api.state.authenticator = Authenticator(app, settings)
    errors.install(api)
    for router in ROUTERS:
        api.include_router(router)
    proxy.install(api, settings)
    api.add_middleware(Gate, max_body_bytes=settings.api_max_body_bytes)
    observe.install(api)  # outside the gate: its refusals are logged and counted too
    for router_of in doors.plugged(doors.ROUTERS):  # the MCP tools at /mcp (mcp_tools.http)
        api.include_router(router_of(app, settings))
    ui.install(api)  # the summary-board page at /ui/
    return api


def _load_embedder(app: App, loaded: threading.Event) -> None:
    load = getattr(app.embedder, "load", None)  # a remote embedder has nothing to load
    try:
        if load is not None:
            load()
    except Exception:
        logging.getLogger("memctx.api").exception("the embedder did not load")
        return
    loaded.set()


def serve_app() -> FastAPI:
    """uvicorn's factory for `memctx serve`: settings from MEMCTX_* variables."""
    settings = Settings()
    api = create_app(open_app(settings), settings, close_on_shutdown=True)
    observe.configure_logging(settings.log_level)
    return api
