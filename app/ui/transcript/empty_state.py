"""What an empty conversation shows, centred where its turns will be.

Guarantees: a title, what to do next (`message`: typing works once a model is ready, or how a
model gets ready), a few starter prompts (each a button named for assistive technology that
emits `promptChosen` with its prompt, for the window to put in the message box) and the fact
that answers come from this computer unless a chat is pointed at a remote endpoint; on a first
run the window adds the longer welcome (`add_welcome`). It takes the transcript's spare height
and centres its content in it, so nothing of it sits above the conversation once one starts.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGridLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from app.ui.column import Centred
from app.ui.icons import give
from app.ui.theme import mark
from app.ui.window.about import EMPTY_TITLE, FACTS, STARTERS, Welcome

STARTER_ICONS = ("lightbulb-outline", "code-tags", "text-box-outline", "format-list-bulleted")
WIDEST = 600  # pixels: the empty state's text is narrower than the conversation's column


class EmptyState(QWidget):
    """See the module guarantees."""

    promptChosen = Signal(str)

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("emptyState")
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Expanding)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 12, 0, 12)
        outer.addStretch(2)
        holder = QWidget(self)
        self.content = QWidget(holder)
        Centred(holder, self.content, WIDEST, gutter=0)
        outer.addWidget(holder)
        outer.addStretch(3)
        self.layout_ = QVBoxLayout(self.content)
        self.layout_.setSpacing(10)
        self.title = self._label(EMPTY_TITLE, "Empty conversation")
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.6)
        font.setBold(True)
        self.title.setFont(font)
        self.message = self._label("", "What to do next")
        mark(self.message, "muted")
        self.starters: list[QPushButton] = []
        grid = QGridLayout()
        grid.setSpacing(8)
        for n, (label, prompt) in enumerate(STARTERS):
            button = QPushButton(label, self.content)
            give(button, STARTER_ICONS[n % len(STARTER_ICONS)])
            button.setAccessibleName(f"Starter prompt: {label}")
            button.setToolTip(prompt.strip())
            mark(button, "starter")
            button.clicked.connect(lambda _=False, p=prompt: self.promptChosen.emit(p))
            grid.addWidget(button, n // 2, n % 2)
            self.starters.append(button)
        self.layout_.addLayout(grid)
        self.facts = self._label(FACTS, "Where answers come from")
        mark(self.facts, "muted")
        self.welcome: Welcome | None = None

    def _label(self, text: str, name: str) -> QLabel:
        label = QLabel(text, self.content)
        label.setWordWrap(True)
        label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        label.setAccessibleName(name)
        self.layout_.addWidget(label)
        return label

    def add_welcome(self) -> Welcome:
        """The first run's longer note, in place of the facts until its "Got it" (which the
        window also hears, to remember it)."""
        self.welcome = Welcome(self.content)
        self.layout_.addWidget(self.welcome)
        self.facts.hide()
        self.welcome.close_button.clicked.connect(self._welcomed)
        return self.welcome

    def _welcomed(self) -> None:
        if self.welcome is not None:
            self.welcome.hide()
        self.facts.show()


__all__ = ["EmptyState"]
