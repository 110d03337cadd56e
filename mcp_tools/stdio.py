"""The stdio transport: one user, from the configured key, and one bound conversation.

Owns: resolving `MEMCTX_API_KEY` (an API key or a JWT, checked by the core's `Authenticator`, as the API checks it)
to the user every tool acts for, before the server starts; a missing or invalid credential is a
`StartupError` naming the variable. The bound conversation is `MEMCTX_CONVERSATION`, if set.
"""

from __future__ import annotations

from memctx.mcp_tools.binding import Binding
from memctx.mcp_tools.server import build_server
from memctx.app import App
from memctx.auth import Authenticator, Caller, Unauthorized
from memctx.config import Settings
from memctx.models import InvalidInput, check_text


class StartupError(RuntimeError):
    """The server cannot start: the message says which setting to fix."""


def binding(app: App, settings: Settings) -> Binding:
    """The caller named by the configured credential, and the configured conversation."""
    if settings.api_key is None or not settings.api_key.get_secret_value().strip():
        raise StartupError("MEMCTX_API_KEY is not set: create a key with `memctx keys create --user UUID`")
    try:
        user = Authenticator(app, settings).user(settings.api_key.get_secret_value().strip())
    except Unauthorized:
        raise StartupError("MEMCTX_API_KEY is not a valid key: it is unknown, revoked or expired") from None
    if settings.conversation is not None:
        try:
            check_text(settings.conversation, "MEMCTX_CONVERSATION")
        except InvalidInput as exc:
            raise StartupError(str(exc)) from None
    return Binding(Caller(user, app.for_user(user)), settings.conversation or None)


def serve(app: App, settings: Settings) -> None:
    """Serve the tools on stdin/stdout until the client closes them."""
    bound = binding(app, settings)
    build_server(lambda ctx: bound).run("stdio")
