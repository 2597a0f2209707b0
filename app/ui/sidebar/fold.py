"""Whether the conversation list shows: the user's choice, and a narrow window's room.

Guarantees: `toggle` shows a hidden list and hides a shown one, at once; in a window at least
`NARROW_PX` wide the choice is the user's and is remembered (UiState "sidebar", written off
the GUI thread) for the next start; a narrower window folds the list away by itself, without
forgetting that choice, and a `toggle` there opens it for as long as the window stays narrow;
the toggle button's checked state always says whether the list shows.
"""

from __future__ import annotations

from PySide6.QtWidgets import QAbstractButton, QWidget

from app.controllers.ui_state import UiState

NARROW_PX = 860  # a window narrower than this folds the conversation list away
KEY = "sidebar"


class SidebarFold:
    """See the module guarantees."""

    def __init__(self, sidebar: QWidget, button: QAbstractButton, state: UiState) -> None:
        self.sidebar, self.button, self.state = sidebar, button, state
        self.wanted = bool(state.get(KEY, True))  # the user's choice in a wide window
        self.narrow = False
        self.peek = False  # opened by the user while the window is narrow
        button.setCheckable(True)
        button.clicked.connect(lambda _checked=False: self.toggle())
        self._apply()

    def shown(self) -> bool:
        return not self.sidebar.isHidden()

    def toggle(self) -> None:
        if self.narrow:
            self.peek = not self.shown()
        else:
            self.wanted = not self.shown()
            self.state.set_later(KEY, self.wanted)
        self._apply()

    def fit(self, width: int) -> None:
        """The window is `width` pixels wide now."""
        narrow = width < NARROW_PX
        if narrow != self.narrow:
            self.narrow, self.peek = narrow, False
            self._apply()

    def _apply(self) -> None:
        on = self.peek if self.narrow else self.wanted
        self.sidebar.setVisible(on)
        self.button.setChecked(on)
        self.button.setToolTip(("Hide" if on else "Show") + " the conversations (Ctrl+B)")


__all__ = ["NARROW_PX", "SidebarFold"]
