"""The composer's field: one rounded frame holding the attached files, the message box and a
row of small controls, with Send (Stop while an answer streams) at its right.

Guarantees: every control of the next message lives inside the field (`ComposerField`): the
image and file chips above the box, then Attach, Tools (with how many tools are on), JSON mode, the
reasoning effort (only when the model takes one), the "more" menu (Offline and Library,
checkable, its button saying which is on), the message's size and Send, always at the same
place; the field's border takes the accent colour while the box has the focus; a menu of
checkable items (`StayOpenMenu`) stays open while items are ticked, by mouse or keyboard,
so several can be chosen in one go; menus open above their button (the field sits at the
window's bottom). Behaviour is the composer's (`composer.py`); this module builds and lays out.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable

from PySide6.QtCore import QPoint, QSize, Qt
from PySide6.QtGui import QAction, QKeyEvent, QMouseEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.controllers.fit import Fit
from app.ui.composer.file_chips import FileChips
from app.ui.composer.fit_bar import FitCount
from app.ui.composer.image_chips import ImageChips
from app.ui.composer.message_box import MessageBox
from app.ui.icons import give
from app.ui.theme import mark

EFFORTS = ("default effort", "low", "medium", "high")
_TICK_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space)


class StayOpenMenu(QMenu):
    """A menu whose checkable items toggle without closing it (mouse, Enter or Space); any
    other item closes it as usual."""

    def _tick(self, action: QAction | None) -> bool:
        if action is None or not action.isCheckable() or not action.isEnabled():
            return False
        action.trigger()  # toggles it and says so (`toggled`, `triggered`)
        return True

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton and self._tick(
            self.actionAt(event.position().toPoint())
        ):
            return
        super().mouseReleaseEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in _TICK_KEYS and self._tick(self.activeAction()):
            return
        super().keyPressEvent(event)


def popup_above(menu: QMenu, button: QWidget) -> None:
    """Open `menu` with its bottom on `button`'s top (Qt moves it on screen if need be)."""
    height = menu.sizeHint().height()
    menu.popup(button.mapToGlobal(QPoint(0, -height)))


def _small(parent: QWidget, icon: str, text: str, name: str, tip: str) -> QToolButton:
    button = QToolButton(parent)
    give(button, icon)
    button.setText(text)
    button.setAccessibleName(name)
    button.setToolTip(tip)
    button.setIconSize(QSize(16, 16))
    button.setToolButtonStyle(
        Qt.ToolButtonStyle.ToolButtonTextBesideIcon
        if text
        else Qt.ToolButtonStyle.ToolButtonIconOnly
    )
    return button


class ComposerField(QFrame):
    """The rounded field: chips, the message box, and the controls' row."""

    def __init__(self, measure: Callable[[str], Awaitable[Fit]], parent: QWidget) -> None:
        super().__init__(parent)
        mark(self, "composer")
        self.setProperty("focused", False)
        column = QVBoxLayout(self)
        column.setContentsMargins(10, 6, 6, 6)
        column.setSpacing(2)
        self.images = ImageChips(self)
        self.chips = FileChips(self)
        self.box = MessageBox(self)
        self.box.setAccessibleName("Message")
        column.addWidget(self.images)
        column.addWidget(self.chips)
        column.addWidget(self.box)
        column.addLayout(self._build_row(measure))
        self.box.focusChanged.connect(self._focused)

    def _build_row(self, measure: Callable[[str], Awaitable[Fit]]) -> QHBoxLayout:
        """Attach, Tools, JSON, the effort, more; the size and Send at the right."""
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(2)
        self.attach = _small(
            self,
            "paperclip",
            "",
            "Attach files to the message",
            "Attach text, Markdown, code, HTML, PDF or Word files, or images (or drop or paste"
            " them on the message)",
        )
        self.tools_button = _small(
            self,
            "tools",
            "Tools",
            "Choose the tools of this conversation",
            "The tools this conversation may call",
        )
        self.json_mode = _small(
            self,
            "code-json",
            "JSON",
            "Answer in JSON matching the schema",
            "JSON mode: the answer is JSON matching the schema (edited above the message)",
        )
        self.json_mode.setCheckable(True)
        self.effort_label = QLabel("Reasoning", self)
        mark(self.effort_label, "muted")
        self.effort = QComboBox(self)
        self.effort.addItems(list(EFFORTS))
        self.effort.setAccessibleName("Reasoning effort for the next message")
        self.effort.setToolTip("How long the model reasons before it answers")
        self.effort.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.effort_label.setBuddy(self.effort)
        self._build_more()
        self.count = FitCount(measure, self)
        self.count.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.count.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.send = QPushButton(self)
        self.send.setMinimumWidth(self.send.fontMetrics().horizontalAdvance("Stop ") * 3)
        for widget in (self.attach, self.tools_button, self.json_mode):
            row.addWidget(widget)
        row.addSpacing(4)
        row.addWidget(self.effort_label)
        row.addWidget(self.effort)
        row.addWidget(self.more)
        row.addWidget(self.count, 1)
        row.addSpacing(4)
        row.addWidget(self.send)
        return row

    def _build_more(self) -> None:
        """More: Offline and Library, ticked in a menu that stays open."""
        self.more = _small(
            self,
            "dots-horizontal",
            "",
            "More options for this conversation",
            "Offline and the documents library",
        )
        self.more_menu = StayOpenMenu(self.more)
        self.more_menu.setToolTipsVisible(True)
        self.offline = QAction("Offline", self)
        self.offline.setToolTip("Keep this conversation off the network: its tools may not use it")
        self.library = QAction("Library", self)
        self.library.setToolTip(
            "Each message also carries the most relevant passages of your documents library"
            " (harmony-desk documents add FOLDER); the answer cites them as [n]"
        )
        for action in (self.offline, self.library):
            action.setCheckable(True)
            self.more_menu.addAction(action)
            action.toggled.connect(self.say_more)
        self.more.clicked.connect(lambda: popup_above(self.more_menu, self.more))

    def say_more(self) -> None:
        """The more button names what is on in its menu (nothing: just its icon)."""
        on = [a.text() for a in (self.offline, self.library) if a.isChecked()]
        self.more.setText(" · ".join(on))
        self.more.setToolButtonStyle(
            Qt.ToolButtonStyle.ToolButtonTextBesideIcon
            if on
            else Qt.ToolButtonStyle.ToolButtonIconOnly
        )
        self.more.setAccessibleDescription(", ".join(on) + " on" if on else "")

    def say_tools(self, count: int) -> None:
        """Tools, with how many are on ("Tools · 2")."""
        self.tools_button.setText(f"Tools · {count}" if count else "Tools")
        self.tools_button.setAccessibleDescription(
            f"{count} tool{'s' if count != 1 else ''} on" if count else "no tools on"
        )

    def _focused(self, on: bool) -> None:
        self.setProperty("focused", on)
        self.style().unpolish(self)
        self.style().polish(self)

    def order_tabs(self) -> None:
        """Tab: the message, Send, then the small controls left to right."""
        chain: list[QWidget] = [self.box, self.send, self.attach, self.tools_button]
        chain += [self.json_mode, self.effort, self.more]
        for first, then in itertools.pairwise(chain):
            QWidget.setTabOrder(first, then)


__all__ = ["EFFORTS", "ComposerField", "StayOpenMenu", "popup_above"]
