"""The message's size before it is sent, and what to do with one the context cannot hold.

Guarantees: the count ("312 tokens · 3,400 left") follows the message box at most every
`PAUSE_MS` after the user stops typing, and a count that arrives after a newer one was asked
is dropped; it turns to the error colour when the message cannot fit. A message that cannot
fit (said after a large paste, or when the user sends it) offers exactly three ways on:
attach it as a document, raise the context (named, or disabled saying why), or cancel — the
message is never sent to fail.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from app.controllers.fit import Fit
from app.ui.theme import mark

PAUSE_MS = 300


class FitCount(QLabel):
    """The message's tokens against the room left, counted off the GUI thread."""

    counted = Signal(object)  # the Fit of the text last asked

    def __init__(self, measure: Callable[[str], Awaitable[Fit]], parent: QWidget) -> None:
        super().__init__(parent)
        self.setAccessibleName("Message size")
        mark(self, "muted")
        self.measure = measure
        self.source: Callable[[], str] = lambda: ""  # the text to count (the message box's)
        self.fit: Fit | None = None
        self._text = ""
        self._asked = 0
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(PAUSE_MS)
        self._timer.timeout.connect(self.count_now)

    def follow(self, empty: bool) -> None:
        """The box changed: count it once the typing pauses (its text is read then, not on
        every keystroke)."""
        if empty:
            self._text = ""
            self._timer.stop()
            self._asked += 1
            self.fit = None
            self.setText("")
            return
        self._timer.start()

    def current_for(self, text: str) -> bool:
        """Whether `fit` is the count of `text` (no newer count pending)."""
        return self.fit is not None and self._text == text and not self._timer.isActive()

    def count_now(self, text: str | None = None) -> asyncio.Future[Fit | None]:
        """Count `text` (default: the source's text) now; the result lands in `fit` (and
        `counted`)."""
        self._timer.stop()
        self._text = text if text is not None else self.source()
        self._asked += 1
        asked, text = self._asked, self._text

        async def run() -> Fit | None:
            fit = await self.measure(text)
            if asked != self._asked:
                return None  # a newer count is coming
            self.fit = fit
            self.setText(fit.summary())
            mark(self, "muted" if fit.fits else "error")
            self.counted.emit(fit)
            return fit

        return asyncio.ensure_future(run())


class FitOffer(QWidget):
    """For a message the context cannot hold: attach it, raise the context, or cancel."""

    attachChosen = Signal()
    raiseChosen = Signal(int)  # the context size to load
    cancelChosen = Signal()

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.sentence = QLabel(self)
        self.sentence.setWordWrap(True)
        self.sentence.setAccessibleName("The message does not fit")
        mark(self.sentence, "error")
        self.attach = QPushButton("Attach it as a document", self)
        self.attach.setAccessibleName("Attach the text as a document instead")
        self.attach.setToolTip("The answer then reads the passages most relevant to your question")
        self.larger = QPushButton("Raise the context", self)
        self.larger.setAccessibleName("Reload the model with a larger context")
        self.cancel = QPushButton("Cancel", self)
        self.cancel.setAccessibleName("Do not send it")
        row.addWidget(self.sentence, 1)
        for button in (self.attach, self.larger, self.cancel):
            row.addWidget(button)
        self._size = 0
        self.attach.clicked.connect(self._chose(self.attachChosen.emit))
        self.larger.clicked.connect(self._chose(lambda: self.raiseChosen.emit(self._size)))
        self.cancel.clicked.connect(self._chose(self.cancelChosen.emit))
        self.hide()

    def _chose(self, then: Callable[[], None]) -> Callable[[], None]:
        def chosen() -> None:
            self.hide()
            then()

        return chosen

    def offer(self, fit: Fit, pasted: bool) -> None:
        """Say how far over the message is and offer the three ways on."""
        what = "The pasted text" if pasted else "This message"
        self.sentence.setText(
            f"{what} is {fit.tokens:,} tokens; this conversation has room for {fit.room:,}."
        )
        size = fit.larger_context()
        self._size = size or 0
        self.larger.setEnabled(size is not None)
        if size is not None:
            self.larger.setText(f"Raise the context to {size:,}")
            self.larger.setToolTip("Reloads the model; a larger context takes more memory")
        else:
            self.larger.setText("Raise the context")
            trained = f"{fit.trained:,} tokens" if fit.trained else "less"
            self.larger.setToolTip(
                f"The model was trained for {trained}"
                if not fit.estimated
                else "A remote endpoint's context is set on its server"
            )
        self.show()


__all__ = ["PAUSE_MS", "FitCount", "FitOffer"]
