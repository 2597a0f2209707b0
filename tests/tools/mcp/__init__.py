"""MCP servers as tools (`app/tools/mcp`), in the terminal and the window."""
