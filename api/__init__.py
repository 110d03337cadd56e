"""api: thin layer over memctx (filled by later issues)."""
