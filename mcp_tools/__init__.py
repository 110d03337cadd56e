"""mcp_tools: the MCP server over memctx (thin): the tools (`server`), stdio (`stdio`) and
streamable HTTP (`http`, also mounted at /mcp by `memctx serve`), and `memctx mcp` (`cli`)."""
