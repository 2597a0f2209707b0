"""The message's size before it is sent, and what to do with one the context cannot hold.

Guarantees: the count ("312 tokens · 3,400 left") follows the message box at most every
`PAUSE_MS` after the user stops typing, and a count that arrives after a newer one was asked
is dropped; it turns to the error colour when the message cannot fit; `recount` drops a count
measured against a context or a conversation that changed since (a reload after "Raise the
context", an answer, a compaction), so a decision is never taken on it. A closed or hidden
window counts nothing: the pause's count waits until it is shown again. A message that cannot
fit (said after a large paste, or when the user sends it) offers its ways on: attach it as a
document (while documents would still get `MIN_DOCUMENT` tokens), raise the context (named),
compact the conversation now, move it to a new chat (in a chat with history), or cancel — and
every way that cannot work here is shown disabled with its reason in words under the buttons,
not only in a tooltip. The message is never sent to fail.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from PySide6.QtCore import QTimer, Signal
from PySide6.QtGui import QHideEvent, QShowEvent
from PySide6.QtWidgets import QGridLayout, QLabel, QPushButton, QVBoxLayout, QWidget

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
        self._held = False  # a pause's count stopped by hiding, to be taken once shown
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

    def hideEvent(self, event: QHideEvent) -> None:
        """Hidden (its window closed): no count is taken for a message nobody sees."""
        self._held = self._timer.isActive()
        self._timer.stop()
        super().hideEvent(event)

    def showEvent(self, event: QShowEvent) -> None:
        """Shown again: the count the pause was waiting for is taken after it."""
        super().showEvent(event)
        if self._held:
            self._held = False
            self._timer.start()

    def recount(self) -> None:
        """What the count was measured against changed (the model loaded again, perhaps with
        another context; the conversation grew or was compacted): the count is dropped and,
        with text in the box, taken again."""
        self.fit = None
        self._asked += 1  # a count under way measured the old context
        text = self.source()
        if text:
            self.count_now(text)
        else:
            self._text = ""
            self.setText("")

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
    """For a message the context cannot hold: the ways on, each that cannot work here shown
    disabled with its reason in words (see the module guarantees)."""

    attachChosen = Signal()
    raiseChosen = Signal(int)  # the context size to load
    compactChosen = Signal()
    newChatChosen = Signal()
    cancelChosen = Signal()

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.compact_refused: Callable[[], str] = lambda: COMPACT_NOT_WIRED  # "" when it can
        self.chat_empty: Callable[[], bool] = lambda: True  # a new chat would change nothing
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(4)
        self.sentence = _label(self, "The message does not fit", "error")
        self.attach = QPushButton("Attach it as a document", self)
        self.larger = QPushButton("Raise the context", self)
        self.compact = QPushButton("Compact now", self)
        self.new_chat = QPushButton("Move to a new chat", self)
        self.cancel = QPushButton("Cancel", self)
        for button, (name, tip) in zip(self.ways(), WAYS, strict=True):
            button.setAccessibleName(name)
            button.setToolTip(tip)
        self.why = _label(self, "Why some ways are not offered", "muted")
        row = QGridLayout()  # three a row: the offer fits a 640-pixel window
        for at, button in enumerate(self.ways()):
            row.addWidget(button, at // 3, at % 3)
        row.setColumnStretch(3, 1)
        column.addWidget(self.sentence)
        column.addLayout(row)
        column.addWidget(self.why)
        self._size = 0
        self.attach.clicked.connect(self._chose(self.attachChosen.emit))
        self.larger.clicked.connect(self._chose(lambda: self.raiseChosen.emit(self._size)))
        self.compact.clicked.connect(self._chose(self.compactChosen.emit))
        self.new_chat.clicked.connect(self._chose(self.newChatChosen.emit))
        self.cancel.clicked.connect(self._chose(self.cancelChosen.emit))
        self.hide()

    def ways(self) -> tuple[QPushButton, ...]:
        return (self.attach, self.larger, self.compact, self.new_chat, self.cancel)

    def _chose(self, then: Callable[[], None]) -> Callable[[], None]:
        def chosen() -> None:
            self.hide()
            then()

        return chosen

    def offer(self, fit: Fit, pasted: bool) -> None:
        """Say how far over the message is and offer the ways on."""
        what = "The pasted text" if pasted else "This message"
        self.sentence.setText(
            f"{what} is {fit.tokens:,} tokens; this conversation has room for {fit.room:,}."
        )
        size = fit.larger_context()
        self._size = size or 0
        self.larger.setText(f"Raise the context to {size:,}" if size else "Raise the context")
        refused = {
            self.attach: _attach_refused(fit),
            self.larger: "" if size is not None else _raise_refused(fit),
            self.compact: self.compact_refused(),
            self.new_chat: "this chat is empty already." if self.chat_empty() else "",
        }
        for (button, why), (_name, tip) in zip(refused.items(), WAYS, strict=False):
            button.setEnabled(not why)
            button.setToolTip(why or tip)
        self.compact.setVisible(not self.chat_empty())  # an empty chat: nothing to compact
        self.new_chat.setVisible(not self.chat_empty())
        reasons = [f"{b.text()}: {why}" for b, why in refused.items() if why and not b.isHidden()]
        self.why.setText("\n".join(reasons))
        self.why.setVisible(bool(reasons))
        self.show()


COMPACT_NOT_WIRED = "Compacting is not available here."
WAYS = (  # each way's accessible name and tooltip, in the buttons' order
    ("Attach the text as a document", "The answer then reads the passages most relevant to it"),
    ("Reload the model with a larger context", "Reloads the model; more context takes more memory"),
    (
        "Summarise the older exchanges now",
        "Older exchanges become a summary; each message stays",
    ),
    ("Send it in a new, empty chat", "The message moves to a new chat; this one stays as it is"),
    ("Do not send it", "The message is not sent"),
)
MIN_DOCUMENT = 128  # attaching is offered when documents may take at least this many tokens


def _attach_refused(fit: Fit) -> str:
    """Why attaching cannot help ("" when it can)."""
    if fit.document_room() >= MIN_DOCUMENT:
        return ""
    return "this conversation has no room left for documents (they would be left out whole)."


def _raise_refused(fit: Fit) -> str:
    """Why the context cannot be raised, in words shown beside the disabled button."""
    if fit.estimated:
        return "a remote endpoint's context is set on its server."
    if fit.trained:
        return f"the model was trained for {fit.trained:,} tokens; this needs more."
    return "the model does not say how much context it was trained for."


def _label(parent: QWidget, name: str, role: str) -> QLabel:
    label = QLabel(parent)
    label.setWordWrap(True)
    label.setAccessibleName(name)
    mark(label, role)
    return label


__all__ = ["MIN_DOCUMENT", "PAUSE_MS", "FitCount", "FitOffer"]
