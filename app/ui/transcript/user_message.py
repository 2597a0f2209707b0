"""The user's message in the transcript, folded when it is long.

Guarantees: a message of more than `FOLD_LINES` lines or `FOLD_CHARS` characters (a pasted
log, a file's text) shows folded — its first `SHOWN_LINES` lines, at most `SHOWN_CHARS`
characters, then "…" — with a "Show all" button under the bubble that says how much there is;
"Show all" shows the whole message and becomes "Show less", which folds it again; a shorter
message shows whole, with no button. Folding changes only what the bubble shows: the message
(what was sent, what Edit opens, what is saved) is always whole (`whole`). The same message
shown again (a repaint of its turn) keeps its state; another message starts folded. The button
shows and hides with the bubble (while the message is edited, neither shows).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from app.ui.icons import give
from app.ui.transcript.turn_parts import ActionButton, Bubble

FOLD_LINES = 40  # more lines than this: folded
FOLD_CHARS = 3000  # or more characters than this
SHOWN_LINES = 12  # of a folded message
SHOWN_CHARS = 1200


def folds(text: str) -> bool:
    """Whether `text` is long enough to be folded."""
    return text.count("\n") + 1 > FOLD_LINES or len(text) > FOLD_CHARS


def folded(text: str) -> str:
    """The start of `text` a folded message shows, ending in "…"."""
    head = "\n".join(text.split("\n")[:SHOWN_LINES])[:SHOWN_CHARS]
    return head.rstrip() + " …"


class UserMessage(Bubble):
    """The user's message bubble, with its Show all / Show less button (`toggle`, which the
    turn places under the bubble)."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.whole = ""
        self.expanded = False
        self.toggle = ActionButton(
            "Show all", "Show all of your message", "chevron-down", parent, show_text=True
        )
        self.toggle.clicked.connect(self.flip)
        self.toggle.hide()

    def setText(self, text: str) -> None:
        """Show message `text` (folded when long; a new message starts folded)."""
        if text != self.whole:
            self.whole, self.expanded = text, False
        self._render()

    def setVisible(self, visible: bool) -> None:
        super().setVisible(visible)
        self.toggle.setVisible(visible and folds(self.whole))

    def flip(self) -> None:
        """Show all of a folded message, or fold it again."""
        self.expanded = not self.expanded
        self._render()

    def _render(self) -> None:
        long = folds(self.whole)
        super().setText(self.whole if self.expanded or not long else folded(self.whole))
        lines = self.whole.count("\n") + 1
        size = f"{lines:,} lines, {len(self.whole):,} characters"
        if self.expanded:
            self.toggle.setText("Show less")
            give(self.toggle, "chevron-up")
            self.toggle.setAccessibleName(f"Fold your message ({size})")
            self.toggle.setToolTip(f"Show the start of your message only ({size})")
        else:
            self.toggle.setText("Show all")
            give(self.toggle, "chevron-down")
            self.toggle.setAccessibleName(f"Show all of your message ({size})")
            self.toggle.setToolTip(f"Show all of your message ({size})")
        self.toggle.setVisible(long and not self.isHidden())
        self.updateGeometry()


ALIGN = Qt.AlignmentFlag.AlignRight  # where the turn puts the button, under the bubble

__all__ = ["ALIGN", "FOLD_CHARS", "FOLD_LINES", "UserMessage", "folded", "folds"]
