"""The write path's first room: messages in.

`messages.MessageStore` creates conversations and appends validated, token-counted, embedded
messages, scoped by user; `ingest` reads LoCoMo and JSONL files and stores each in one
transaction. What happens next (outbox → dispatch → catch-up → board → long-term) is
`memctx.pipeline`.
"""

from memctx.store.messages import DEFAULT_USER, MessageStore, PreparedMessage, UnknownConversation, fill_lexeme_counts

__all__ = ["DEFAULT_USER", "MessageStore", "PreparedMessage", "UnknownConversation", "fill_lexeme_counts"]
