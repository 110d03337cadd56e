"""api: the HTTP door over memctx (thin): routes under /v1, the proxy, the board page."""
