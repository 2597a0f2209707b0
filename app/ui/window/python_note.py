"""The status bar's quiet note about the python tool's runtime being compiled ahead.

Guarantees: the note is hidden unless there is something to say: "Preparing the python tool…"
while its runtime compiles (the first start, a new version, a damaged cache), "The python tool
is ready" for a while after, the reason when it failed (kept, its tooltip saying that the tool
will try again at its first call); `start_python_note(window)` does nothing where the runtime
is not installed, and begins the check `START_MS` after it is called, so the window's own start
goes first.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QMainWindow, QStatusBar

from app.controllers.runtime_note import RuntimePrep, RuntimeState

START_MS = 3000


class PythonNote(QLabel):
    """See the module guarantees."""

    def __init__(self, bar: QStatusBar, prep: RuntimePrep) -> None:
        super().__init__(bar)
        self.setAccessibleName("Python tool")
        self.setEnabled(False)  # the quiet, secondary text colour of a disabled label
        self.hide()
        bar.addPermanentWidget(self)
        self.prep = prep
        prep.changed.connect(self.show_state)

    def show_state(self, state: RuntimeState, text: str) -> None:
        self.setText(text)
        self.setEnabled(state is RuntimeState.FAILED)  # a failure is said in full colour
        self.setToolTip(
            "The python tool's runtime is compiled once per version, ahead of its first use"
            if state is not RuntimeState.FAILED
            else "The python tool will try again at its first call; `harmony-desk tools"
            " prepare` says more"
        )
        self.setVisible(state is not RuntimeState.QUIET)


def start_python_note(window: QMainWindow) -> PythonNote | None:
    """The note in `window`'s status bar, and the runtime's check begun (see the module)."""
    prep = RuntimePrep.for_this_install(window)
    if prep is None:
        return None
    note = PythonNote(window.statusBar(), prep)
    QTimer.singleShot(START_MS, prep.start)
    return note


__all__ = ["PythonNote", "start_python_note"]
