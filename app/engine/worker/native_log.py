"""llama.cpp's own log lines inside the worker: to the `llama` logger, gathered for the app.

Guarantees: llama.cpp never writes to the worker's stderr; its lines are kept (level, text)
until the worker's next reply carries them to the app (`Gathered.take`). Levels are ggml's own
(`ggml.h`: 1 debug, 2 info, 3 warning, 4 error, 5 the continuation of the line before, which
keeps that line's level) — not the older table llama-cpp-python's `_logger.py` still has,
which shifted every line up a level (info as warning, warning as error). Debug lines (about
2,000 a load: each tensor created, each graph input) never leave the worker. A warning known to
be harmless (`HARMLESS`) is an info line: the app's log file keeps info and below at DEBUG, so
a normal load records nothing at WARNING or above.
"""

from __future__ import annotations

import logging
import re
from typing import Any

# ggml_log_level (ggml.h): NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5.
_LEVELS = {1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR}
_CONT = 5
# llama.cpp warnings that say nothing is wrong, and why:
HARMLESS = (
    # The worker first opens the model with `vocab_only=True` (to read its metadata and check
    # its tokenizer before the weights). A vocab-only model has no hyper-parameters, so its
    # n_ctx_train is 0, yet llama-cpp-python still builds a (512-token) context for it, and
    # llama_context's constructor compares the two: "n_ctx_seq (512) > n_ctx_train (0) --
    # possible training context overflow". That context never evaluates a token.
    re.compile(r"n_ctx_seq \(\d+\) > n_ctx_train \(0\)"),
    # The app chose a context shorter than the model was trained for (to fit memory): the
    # usual case, said on every load of a long-context model.
    re.compile(r"n_ctx_seq \(\d+\) < n_ctx_train \(\d+\) -- the full capacity"),
    # llama.cpp mending a vocabulary as it reads it, the same on every load of such a model:
    # gpt-oss's special tokens made USER_DEFINED and its EOG list settled; a token that looks
    # like a control token but is not marked one (Gemma 3's '</s>') given the control type.
    re.compile(r"setting token '.*' \(\d+\) attribute to"),
    re.compile(r"special_eog_ids contains both"),
    re.compile(r"control-looking token: .* was not control-type"),
    # The full-size sliding-window cache the app asks for (`swa_full`: exact prompt reuse).
    re.compile(r"using full-size SWA cache"),
)
log = logging.getLogger("llama")
log.addHandler(logging.NullHandler())  # silent unless the app attaches a handler (debug pane)
_last = [logging.DEBUG]  # the level of the line a continuation continues


class Gathered(logging.Handler):
    """llama.cpp's lines gathered for the app (sent over the pipe before the next message)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if text:
            self.lines.append((record.levelno, text))

    def errors(self) -> list[str]:
        """The error lines gathered and not yet taken."""
        return [text for level, text in self.lines if level >= logging.ERROR]

    def take(self) -> list[tuple[int, str]]:
        lines, self.lines = self.lines, []
        return lines


def level_of(ggml_level: int, text: str) -> int:
    """The `logging` level of one llama.cpp line (see the module guarantees)."""
    if ggml_level == _CONT:
        return _last[0]
    level = _LEVELS.get(ggml_level, logging.DEBUG)
    if level == logging.WARNING and any(p.search(text) for p in HARMLESS):
        level = logging.INFO
    _last[0] = level
    return level


def native_log(level: int, text: bytes, _data: Any) -> None:
    """llama.cpp's own log lines go to the `llama` logger, not straight to stderr."""
    line = text.decode("utf-8", "replace").rstrip()
    log.log(level_of(level, line), line)


__all__ = ["HARMLESS", "Gathered", "level_of", "log", "native_log"]
