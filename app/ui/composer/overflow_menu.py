"""The composer's more menu's "When the context is full" choices: what the selected conversation
does once it outgrows the model's context (stop and say so, drop the middle, a rolling window).

Guarantees: exactly one choice is ticked — the conversation's own, else the settings' default
(`default`, kept current by the window) — and it follows the selected conversation whenever it
changes, without choosing anything; a choice the user makes is the conversation's from then on
(saved with it) and reaches the session of its next turn.
"""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import SignalInstance
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMenu

from app.domain.budget import Overflow
from app.domain.history import ChatDoc

TITLE = "When the context is full"


class _Chats(Protocol):
    """What the menu needs of the chat controller."""

    docChanged: SignalInstance

    @property
    def doc(self) -> ChatDoc: ...

    def set_overflow(self, policy: Overflow) -> None: ...


class OverflowMenu:
    """See the module guarantees."""

    def __init__(self, menu: QMenu, chats: _Chats) -> None:
        self.chats = chats
        self.default = Overflow.STOP  # the settings' (`MainWindow.use_settings`)
        self.menu = menu.addMenu(TITLE)
        self.menu.setToolTipsVisible(True)
        self.group = QActionGroup(self.menu)
        self.group.setExclusive(True)
        self.actions: dict[Overflow, QAction] = {}
        for policy in Overflow:
            action = QAction(policy.said, self.menu)
            action.setCheckable(True)
            action.setData(policy.value)
            self.group.addAction(action)
            self.menu.addAction(action)
            self.actions[policy] = action
        self.menu.menuAction().setToolTip(
            "What this conversation does once it no longer fits the model's context; the"
            " status bar's context bar shows how full it is"
        )
        self.group.triggered.connect(self._chosen)
        chats.docChanged.connect(self.sync)
        self.sync()

    def chosen(self) -> Overflow:
        """The policy ticked now."""
        return next(p for p, a in self.actions.items() if a.isChecked())

    def set_default(self, policy: Overflow) -> None:
        """The settings' default, for conversations that chose none."""
        self.default = policy
        self.sync()

    def sync(self) -> None:
        """Tick the selected conversation's policy (its own, else the default)."""
        self.actions[self.chats.doc.overflow or self.default].setChecked(True)

    def _chosen(self, action: QAction) -> None:
        self.chats.set_overflow(Overflow(action.data()))


__all__ = ["TITLE", "OverflowMenu"]
