"""memctx: a Postgres-native memory and context engine for LLM chat applications.

A chat handler's front door (memctx.client):

    import memctx

    memory = memctx.connect("postgresql://…")      # or memctx.connect_embedded()
    context = memory.context(text, user=user_id, conversation="support-42", budget=2000)
    reply = llm.chat.completions.create(model=…, messages=context.messages)
    memory.remember([{"role": "user", "content": text}, {"role": "assistant", "content": answer}],
                    user=user_id, conversation="support-42")

The names below are imported on first use, so that `import memctx.config` (or any light module)
does not load the database stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # what type checkers and IDEs read; at run time `__getattr__` imports them
    from memctx.assemble import WorkingContext
    from memctx.client import LOCAL_USER, ConversationRef, Memctx, Scope, UserId, connect, connect_embedded
    from memctx.models import InvalidInput, Message
    from memctx.store import UnknownConversation

__all__ = ["ConversationRef", "InvalidInput", "LOCAL_USER", "Memctx", "Message", "Scope", "UnknownConversation",
           "UserId", "WorkingContext", "connect", "connect_embedded"]

_HOMES = {"WorkingContext": "memctx.assemble", "InvalidInput": "memctx.models", "Message": "memctx.models",
          "UnknownConversation": "memctx.store", **{name: "memctx.client" for name in (
              "LOCAL_USER", "ConversationRef", "Memctx", "Scope", "UserId", "connect", "connect_embedded")}}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'memctx' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(home), name)
