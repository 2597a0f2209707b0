"""What a local MCP server writes to its standard error, kept bounded and told redacted.

Guarantees: the server's stderr is a pipe drained by a thread of its own, which keeps only the
last `KEEP` bytes in memory (nothing on disk), whatever the server writes and however fast;
`excerpt` is at most `EXCERPT` characters of its end (or `limit`), starting at a line (never in
the middle of a cut secret), with every secret redacted (`app.domain.redact`) and the guard's
last line taken out — stderr is told only as a short excerpt of why a server failed (an
error's `details`), never as a tool's result; `status` is the exit status the guard wrote
there (`app/tools/mcp/guard.py`), None while the server runs or when it did not end itself.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from typing import TextIO

from app.domain.redact import redact
from app.tools.mcp.guard import EXIT_LINE

KEEP = 16 * 1024
EXCERPT = 400
CHUNK = 1 << 16
_EXIT = re.compile(rf"\n?{re.escape(EXIT_LINE)}(-?\d+)[ \t]*(?:\n|$)")


class StderrTail:
    """One server's stderr (see the module guarantees); `sink` is what the server writes to."""

    def __init__(self) -> None:
        read, write = os.pipe()
        self._read = read
        self.sink: TextIO = os.fdopen(write, "w", encoding="utf-8", errors="replace")
        self._tail = bytearray()
        self._cut = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, name="mcp-stderr", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while chunk := os.read(self._read, CHUNK):
                with self._lock:
                    self._tail += chunk
                    if len(self._tail) > KEEP:
                        del self._tail[:-KEEP]
                        self._cut = True
        finally:
            os.close(self._read)

    def started(self) -> None:
        """The server has its own copy of the pipe: close ours, so its end is the pipe's end."""
        with contextlib.suppress(OSError):
            self.sink.close()

    def _text(self, wait: float) -> str:
        if self.sink.closed:
            self._thread.join(wait)  # a server that has just died: its last words
        with self._lock:
            text = bytes(self._tail).decode("utf-8", errors="replace")
            cut = self._cut
        if cut:  # the first line may hold the end of a secret whose start is gone
            text = text.partition("\n")[2]
        return text

    def excerpt(self, wait: float = 0.5, limit: int = EXCERPT) -> str:
        """The end of what it wrote, short and redacted ("" when nothing)."""
        text = redact(_EXIT.sub("", self._text(wait))).strip()
        if len(text) > limit:
            text = "…" + text[-limit:]  # redacted first: no secret is cut in two here
        return text

    def status(self, wait: float = 0.5) -> int | None:
        """The server's exit status, as the guard wrote it (None: not ended by itself)."""
        found = _EXIT.findall(self._text(wait))
        return int(found[-1]) if found else None


__all__ = ["EXCERPT", "KEEP", "StderrTail"]
