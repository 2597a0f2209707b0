"""MCP servers in the window: the servers page, sign-in, and a server's sampling and form asks."""
