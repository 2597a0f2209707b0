"""Blocking work (disk, keyring, network) off the GUI thread, its result back on it.

Guarantees: `run(work, then)` runs `work` on a new daemon thread and calls `then(result)` on
the thread that owns this object (the GUI thread), through a queued signal; an exception from
`work` never escapes the thread: its message (and an app error's details) go to `on_error`, on
the GUI thread too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal


class Background(QObject):
    _done = Signal(object)

    def __init__(self, name: str, on_error: Callable[[str, str], None]) -> None:
        super().__init__()
        self.name = name
        self.on_error = on_error
        self._done.connect(lambda f: f(), Qt.ConnectionType.QueuedConnection)

    def later(self, call: Callable[[], None]) -> None:
        """Call `call` on the owning (GUI) thread; safe from any thread."""
        self._done.emit(call)

    def run(self, work: Callable[[], Any], then: Callable[[Any], None]) -> None:
        def thread() -> None:
            try:
                result = work()
            except Exception as exc:  # said to the user through on_error, never raised here
                message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
                details = str(getattr(exc, "details", "") or "")
                self.later(lambda: self.on_error(message, details))
                return
            self.later(lambda: then(result))

        threading.Thread(target=thread, name=self.name, daemon=True).start()
