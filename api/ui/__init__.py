"""The summary-board page at /ui/: a person's window on what the worker made of their
conversations, server-rendered HTML with a few lines of plain script (no build step, nothing
loaded from elsewhere).

Sign-in takes the same credentials as the API (a memctx API key or a Supabase JWT), checks them
with the app's `Authenticator`, and keeps the credential in an HttpOnly, SameSite=Strict cookie
scoped to /ui: page script never sees it, another site cannot send it. Every request resolves it
again to a `Caller` whose App runs under row-level security, exactly as /v1 does. The profile
section (`api.ui.profile`) shows what memctx learned about the person, to correct and rate.
"""

from api.ui import profile  # noqa: F401 (its routes join the page's router: /ui/profile)
from api.ui.routes import router

__all__ = ["router"]
