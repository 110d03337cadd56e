"""memctx: a Postgres-native memory and context engine for LLM chat applications."""

__version__ = "0.1.0"
