"""Who calls a tool, and which conversation the session is bound to.

Owns: `Binding`, the server that carries the transport's `bind` (`MemctxServer`), and memctx's
refusals as tool errors. The tools (`mcp_tools.server`, `mcp_tools.profile`) are module-level
functions: each reads its caller with `bound(ctx)`, so that a tool has no way to name a user.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from memctx.assemble import BudgetTooSmall
from memctx.auth import Caller
from memctx.models import InvalidInput
from memctx.store import UnknownConversation


@dataclass(frozen=True)
class Binding:
    """Who calls (already scoped to them by row-level security), and the session's conversation."""

    caller: Caller
    conversation: str | None


Bind = Callable[[Context], Binding]


class MemctxServer(MCPServer):
    """An MCP server whose tools learn their caller from the transport's `bind`."""

    def __init__(self, bind: Bind, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bind = bind


def bound(ctx: Context) -> Binding:
    """The caller and conversation of the request `ctx` belongs to."""
    server = ctx.mcp_server
    if not isinstance(server, MemctxServer):
        raise ToolError("this tool runs only on memctx's MCP server")
    return server.bind(ctx)


@contextmanager
def refusals(*more: type[Exception]) -> Iterator[None]:
    """memctx's refusals of the caller's input (and the exceptions `more` names: an unknown
    profile item is a `LookupError`), as tool errors the model reads."""
    try:
        yield
    except (InvalidInput, UnknownConversation, BudgetTooSmall, *more) as exc:
        raise ToolError(str(exc)) from None
