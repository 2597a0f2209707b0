"""The python tool's runtime, checked and compiled in the background at the window's start.

Guarantees: `start()` does nothing where the runtime is not installed; otherwise, off the GUI
thread, it checks the compiled runtime (every file hashed: `CompiledCache.prepare`) and compiles
it when it is missing, damaged or from another version — once, even with other windows or
terminals preparing it at the same time. `changed(state, text)` arrives on the GUI thread:
`COMPILING` with a sentence before a compile or a wait for another process's compile, then
`READY` or `FAILED` with the reason, then, `clear_ms` after `READY`, `QUIET` with no text. A
check that finds the runtime ready says nothing at all. `finished(ok)` ends every check.
"""

from __future__ import annotations

from enum import Enum

from PySide6.QtCore import QObject, QTimer, Signal

from app.controllers.background import Background
from app.tools.sandbox_runtime import CompiledCache

CLEAR_MS = 10_000  # how long "ready" stays in view


class RuntimeState(Enum):
    QUIET = "quiet"
    COMPILING = "compiling"
    READY = "ready"
    FAILED = "failed"


READY_TEXT = "The python tool is ready"
FAILED_TEXT = "The python tool could not be prepared: {reason}"


class RuntimePrep(QObject):
    """See the module guarantees; `cache` is the runtime's (a test's own module in tests)."""

    changed = Signal(object, str)  # RuntimeState, the sentence to show ("" for QUIET)
    finished = Signal(bool)  # the check ended: True when the runtime is ready

    def __init__(
        self, cache: CompiledCache, parent: QObject | None = None, clear_ms: int = CLEAR_MS
    ) -> None:
        super().__init__(parent)
        self.cache = cache
        self.state = RuntimeState.QUIET
        self.clear_ms = clear_ms
        self.jobs = Background("python-runtime", self._failed)

    @classmethod
    def for_this_install(cls, parent: QObject | None = None) -> RuntimePrep | None:
        """The python tool's own runtime's preparation; None where it is not installed."""
        from app.tools.sandbox import runtime_folder, unavailable_reason
        from app.tools.sandbox_runtime import runtime_spec

        if unavailable_reason() is not None:
            return None
        return cls(CompiledCache(runtime_spec(runtime_folder())), parent)

    def start(self) -> None:
        """Check, and compile if needed, off the GUI thread."""
        told = self.jobs.later
        self.jobs.run(
            lambda: self.cache.prepare(lambda note: told(lambda: self._say_compiling(note))),
            self._done,
        )

    def _set(self, state: RuntimeState, text: str) -> None:
        self.state = state
        self.changed.emit(state, text)

    def _say_compiling(self, note: str) -> None:
        self._set(RuntimeState.COMPILING, f"{note}…")

    def _done(self, compiled: object) -> None:
        if self.state is RuntimeState.COMPILING:  # found ready: nothing to say
            self._set(RuntimeState.READY, READY_TEXT)
            QTimer.singleShot(self.clear_ms, self, self._quiet)
        self.finished.emit(True)

    def _quiet(self) -> None:
        if self.state is RuntimeState.READY:
            self._set(RuntimeState.QUIET, "")

    def _failed(self, message: str, details: str) -> None:
        self._set(RuntimeState.FAILED, FAILED_TEXT.format(reason=message))
        self.finished.emit(False)


__all__ = ["READY_TEXT", "RuntimePrep", "RuntimeState"]
