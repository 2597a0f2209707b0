"""MCP Apps in the window: a tool's own interface (`ui://` resource) rendered below its card in a
sandboxed web view (`view.py`), wired to the host by the extension's postMessage bridge.

Guarantees: importing this package never imports Qt WebEngine; `available()` says whether it
can be imported (the optional `harmony-desk[apps]` extra; it imports it when it can), and
without it a tool with a view gets its text result on its card and one line saying the view
needs the extra (`UNAVAILABLE`).
"""

from __future__ import annotations

import functools
import importlib

UNAVAILABLE = "This tool has its own view: install harmony-desk[apps] (Qt WebEngine) to see it."


@functools.cache
def available() -> bool:
    """Whether Qt WebEngine's widgets can be imported."""
    try:
        importlib.import_module("PySide6.QtWebEngineWidgets")
    except ImportError:
        return False
    return True


__all__ = ["UNAVAILABLE", "available"]
