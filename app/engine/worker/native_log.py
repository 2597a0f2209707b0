"""llama.cpp's own log lines inside the worker: to the `llama` logger, gathered for the app.

Guarantees: llama.cpp never writes to the worker's stderr; its lines are kept (level, text)
until the worker's next reply carries them to the app (`Gathered.take`).
"""

from __future__ import annotations

import logging
from typing import Any

# ggml's levels: 1 info, 2 warning, 3 error, 4 debug, 5 continuation of the previous line.
_LEVELS = {1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR, 4: logging.DEBUG}
log = logging.getLogger("llama")
log.addHandler(logging.NullHandler())  # silent unless the app attaches a handler (debug pane)


class Gathered(logging.Handler):
    """llama.cpp's lines gathered for the app (sent over the pipe before the next message)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if text:
            self.lines.append((record.levelno, text))

    def take(self) -> list[tuple[int, str]]:
        lines, self.lines = self.lines, []
        return lines


def native_log(level: int, text: bytes, _data: Any) -> None:
    """llama.cpp's own log lines go to the `llama` logger, not straight to stderr."""
    log.log(_LEVELS.get(level, logging.DEBUG), text.decode("utf-8", "replace").rstrip())
