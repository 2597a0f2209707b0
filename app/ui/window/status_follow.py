"""The status bar follows the open chat: its figures are the open chat's last answer's, and its
passing sentences clear themselves.

Guarantees: the speed and context figures are always the open conversation's — a new empty
chat shows none, another chat's answer ending never writes its figures over the open one's,
and going back to a chat shows its last answer's (read from its debug record once that is in
memory: the controller reads a stored one off the GUI thread and says so with `debugChanged`);
a sentence shown while an answer goes on in a chat not open is cleared when that answer ends
or when that chat is opened again;
while a sentence is shown, the model and worker labels step aside so it reads whole beside the
figures, and come back when it goes.
"""

from __future__ import annotations

from typing import Any, Protocol

from PySide6.QtWidgets import QLabel, QStatusBar

from app.controllers.chat import ChatController
from app.domain.history import Reply


class Figures(Protocol):
    """What the follower writes to: the status line's figures."""

    speed: QLabel
    context: QLabel

    def timings(self, s: dict[str, Any]) -> None: ...
    def clear_figures(self) -> None: ...


class StatusFollower:
    """See the module guarantees."""

    def __init__(
        self, bar: QStatusBar, line: Figures, c: ChatController, aside: tuple[QLabel, ...]
    ) -> None:
        self.bar, self.line, self.c, self.aside = bar, line, c, aside
        self._passing = False  # the bar's sentence was shown while an answer went on elsewhere
        c.statusChanged.connect(self._measured)
        c.docChanged.connect(self._opened)
        c.debugChanged.connect(self._debug_read)
        c.busyChanged.connect(self._busy)
        bar.messageChanged.connect(self._message)

    def _measured(self, timings: dict[str, Any]) -> None:
        if self.c.shows_answer:  # an answer in another chat keeps its figures to itself
            self.line.timings(timings)

    def _last(self) -> tuple[int, Reply | None]:
        turns = self.c.doc.turns
        return len(turns) - 1, turns[-1].version.reply if turns else None

    def _opened(self) -> None:
        if self._passing and self.c.shows_answer:
            self.bar.clearMessage()  # back in the chat whose answer it spoke of
        self.line.clear_figures()
        last, reply = self._last()
        if reply is not None and self.c.debug_ready(last):
            self._show(reply)

    def _debug_read(self, turn: int) -> None:
        last, reply = self._last()
        if turn == last and reply is not None and not self.c.shows_answer:
            self._show(reply)

    def _show(self, reply: Reply) -> None:
        debug = reply.debug
        if reply.state == "streaming" or not debug.timings:
            return
        endpoint = self.c.doc.endpoint
        where = {"endpoint": endpoint} if endpoint else {"budget": debug.budget}
        self.line.timings({**debug.timings, "n_ctx": self.c.host.n_ctx, **where})

    def _busy(self, busy: bool) -> None:
        if not busy and self._passing:
            self.bar.clearMessage()  # the answer it spoke of has ended

    def _message(self, text: str) -> None:
        self._passing = bool(text) and self.c.busy and not self.c.shows_answer
        for label in self.aside:
            label.setVisible(not text)


__all__ = ["StatusFollower"]
