"""The notice under an answer the app's stopping cut short (a crash, a kill while it streamed).

Guarantees: shown exactly while the turn's chosen reply is `cut_short` (read back from the
store marked E-STREAM-TRUNCATED), hidden for every other reply, a Stop's (which has its own
notice) and one being continued included; it reads as a Stop's notice does (object name
"notice", the notice's look) and says `INTERRUPTED_NOTICE`, the words the exports use.
"""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWidget

from app.domain.history import Reply
from app.domain.interrupted import INTERRUPTED_NOTICE, cut_short
from app.ui.theme import mark


class InterruptedNotice(QLabel):
    """See the module guarantees."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(INTERRUPTED_NOTICE, parent)
        self.setObjectName("notice")
        self.setAccessibleName("Notice")
        self.setWordWrap(True)
        mark(self, "notice")
        self.hide()

    def show_for(self, reply: Reply | None) -> None:
        """Shown for a reply cut short, hidden otherwise."""
        self.setVisible(reply is not None and cut_short(reply))


__all__ = ["InterruptedNotice"]
