"""Tool-call formats of the chat-template families (see `format.py`), by name."""
