"""The /v1 routes, one module per concern; each handler parses, calls one memctx function as the
caller (`Caller.app`, scoped by row-level security) and serializes."""

from memctx.api.routes import context, conversations, me, messages, ops, profile, summaries

ROUTERS = [conversations.router, messages.router, context.router, summaries.router, me.router, profile.router,
           ops.router]

__all__ = ["ROUTERS"]
