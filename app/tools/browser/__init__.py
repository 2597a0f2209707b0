"""The built-in `browser` tool: fetching, page text, search providers, and the tools."""
