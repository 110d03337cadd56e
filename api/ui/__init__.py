"""The summary-board page at /ui/: a person's window on what the worker made of their
conversations, server-rendered HTML with a few lines of plain script (no build step, nothing
loaded from elsewhere).

Sign-in takes the same credentials as the API (a memctx API key or a Supabase JWT), checks them
with the app's `Authenticator`, and keeps the credential in an HttpOnly, SameSite=Strict cookie
scoped to /ui: page script never sees it, another site cannot send it. Every request resolves it
again to a `Caller` whose App runs under row-level security, exactly as /v1 does. The profile
section (`api.ui.profile`) shows what memctx learned about the person, to correct and rate.
"""

from fastapi import FastAPI

from memctx.api.ui import profile  # noqa: F401 (its routes join the page's router: /ui/profile)

from memctx.api.ui.routes import NotFound, not_found_page, root, router

__all__ = ["install", "router"]


def install(app: FastAPI) -> None:
    """Add the page's routes, the server's /favicon.ico, and the page's 404 for a conversation an
    action names that the caller does not have."""
    app.include_router(router)
    app.include_router(root)  # /favicon.ico
    app.add_exception_handler(NotFound, not_found_page)
