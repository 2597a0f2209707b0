"""Start-up: the category loggers' file and the one crash policy.

Guarantees:
- `configure_logging` sends the category loggers (`engine`, `harmony`, `tools`, `store`, `ui`,
  `library`, `llama` for llama.cpp's own lines, `crash`) to a rotating log file in the data
  folder (`logs/harmony-desk.log`, rotated at `MAX_BYTES` with `BACKUPS` older files kept,
  made at the first line, each file — the rotated ones too — 0600 in a 0700 folder whatever
  the umask), every line cut to `LINE_CHARS` and redacted of secrets first; calling it again
  does not add a second handler; a file that cannot be written is reported by `logging` itself
  and never stops the app;
- the file records INFO and above unless `HARMONY_DESK_LOG_LEVEL` names another level
  (`DEBUG`: everything, llama.cpp's load chatter included); llama.cpp's own info lines arrive
  at DEBUG (`app/engine/local/client.py`), so loading a model writes nothing at INFO: a normal
  launch writes a few lines, not the ~2,000 (300 KB) llama.cpp says while loading;
- `install_crash_handler` makes an exception nobody caught (`sys.excepthook`, and threads'
  `threading.excepthook`) a logged traceback plus one call of `show` with a sentence for the
  user (the window shows a dialog, the terminal a line); the handler itself never raises.
Expected failures never reach it: they are values or `HarmonyDeskError`s handled where they occur.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from app.domain.redact import redact
from app.fileio import private_file
from app.paths import data_dir

CATEGORIES = ("engine", "harmony", "tools", "store", "ui", "library", "llama", "crash", "server")
LOG_NAME = "harmony-desk.log"
LEVEL_ENV = "HARMONY_DESK_LOG_LEVEL"
MAX_BYTES = 1 << 20
BACKUPS = 3


LINE_CHARS = 8000  # a log line is cut to this before it is redacted


class _Redacted(logging.Filter):
    """Each record cut to `LINE_CHARS` (what is left is counted), then redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        said = record.getMessage()
        if len(said) > LINE_CHARS:
            said = f"{said[:LINE_CHARS]} […{len(said) - LINE_CHARS:,} characters not logged]"
        record.msg, record.args = redact(said), None
        return True


class _LazyFile(logging.handlers.RotatingFileHandler):
    """Creates its folder (0700) and file (0600) at the first line written, not before; each
    file a rollover starts is made 0600 the same way."""

    def _open(self):  # type: ignore[no-untyped-def]
        private_file(self.baseFilename)
        return super()._open()


def log_path() -> Path:
    return data_dir() / "logs" / LOG_NAME


def log_level(default: int = logging.INFO) -> int:
    """The level `HARMONY_DESK_LOG_LEVEL` names (DEBUG, INFO, WARNING, ERROR), else `default`."""
    named = logging.getLevelNamesMapping().get(os.environ.get(LEVEL_ENV, "").strip().upper())
    return named if named is not None else default


def configure_logging(level: int | None = None) -> Path:
    """Attach the rotating log file to the category loggers at `level` (None: `log_level()`);
    its path."""
    level = log_level() if level is None else level
    path = log_path()
    handler: logging.Handler = _LazyFile(
        path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8", delay=True
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_Redacted())
    handler.set_name("harmony-desk-file")
    for name in CATEGORIES:
        logger = logging.getLogger(name)
        if not any(h.get_name() == "harmony-desk-file" for h in logger.handlers):
            logger.addHandler(handler)
        logger.setLevel(min(logger.level or level, level))
    return path


def install_crash_handler(show: Callable[[str], None]) -> None:
    """Uncaught exceptions (any thread) are logged with their traceback and told to the user."""
    log = logging.getLogger("crash")

    def report(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt):
            sys.__excepthook__(kind, value, tb)
            return
        try:
            details = "".join(traceback.format_exception(kind, value, tb))
            log.error("uncaught %s\n%s", kind.__name__, details)
            show(
                f"Harmony Desk hit an unexpected error ({kind.__name__}: {redact(str(value))})."
                f" Your conversations are saved. The details are in {log_path()}."
            )
        except Exception:  # the crash policy itself must not crash
            sys.__excepthook__(kind, value, tb)

    def thread_report(args: threading.ExceptHookArgs) -> None:
        report(args.exc_type, args.exc_value or args.exc_type(), args.exc_traceback)

    sys.excepthook = report
    threading.excepthook = thread_report


__all__ = [
    "BACKUPS",
    "CATEGORIES",
    "LEVEL_ENV",
    "MAX_BYTES",
    "configure_logging",
    "install_crash_handler",
    "log_level",
    "log_path",
]
