"""mcp_tools: thin layer over memctx (filled by later issues)."""
