"""The transcript: each turn's message and reply, tool cards, sources and answer footers."""
