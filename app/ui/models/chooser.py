"""The searchable model chooser (Ctrl+L, or clicking the model in the header): every model the
app can load — the bundled ones, the models folders' and the recent files — by name, with its
size, quantisation, context and capability badges.

Guarantees: it opens over the window (a panel of the window, under the picker, never a
separate window), and closes on Esc, on a choice or on a click anywhere else, giving the
keyboard back to where it was; it shows at once with what the library last read and asks the
library to read again (off the GUI thread; the list follows when it comes back); typing
filters as you type (every word must match the name, file name, architecture, quantisation,
badges or where it comes from); Up / Down move through what is shown, Enter or a click
chooses; the model in use is marked and first chosen; a model that cannot be used is left out
(the Models window says why); choosing emits `chosen` with the path and closes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QPoint, Qt, Signal
from PySide6.QtGui import QHideEvent, QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QFrame,
    QGraphicsDropShadowEffect,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.controllers.library_host import LibraryHost, Listed
from app.ui import theme
from app.ui.icons import give
from app.ui.models.rows import (
    BADGE_TIPS,
    BADGES,
    FACTS,
    TITLE,
    WARN,
    ModelRowDelegate,
    describe,
    facts_of,
    name_clear_button,
    titles,
)
from app.ui.theme import mark

PATH = Qt.ItemDataRole.UserRole
SEARCH = Qt.ItemDataRole.UserRole + 10  # the lower-case text the filter matches
_MOVES = (Qt.Key.Key_Up, Qt.Key.Key_Down, Qt.Key.Key_PageUp, Qt.Key.Key_PageDown)


class ModelChooser(QFrame):
    """See the module guarantees."""

    chosen = Signal(str)  # the path of the model to load
    openFile = Signal()
    discover = Signal()
    manage = Signal()

    def __init__(
        self,
        library: LibraryHost,
        loaded: Callable[[], str],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.library, self.loaded = library, loaded
        self.setAccessibleName("Choose a model")
        self.setObjectName("model-chooser")
        mark(self, "card")
        self.resize(600, 470)
        self.hide()
        self._return_to: QWidget | None = None  # where the keyboard was before it opened
        self._under: QWidget | None = None  # what it opened under
        column = QVBoxLayout(self)
        column.setContentsMargins(10, 10, 10, 8)
        self.search = QLineEdit(self)
        self.search.setPlaceholderText("Search your models: name, architecture, quantisation…")
        self.search.setAccessibleName("Search models")
        name_clear_button(self.search)
        self.search.textChanged.connect(self._filter)
        self.search.installEventFilter(self)
        column.addWidget(self.search)
        self.list = QListWidget(self)
        self.list.setAccessibleName("Models")
        self.list.setItemDelegate(ModelRowDelegate(self.list))
        self.list.setMouseTracking(True)
        self.list.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.list.setUniformItemSizes(True)
        self.list.setStyleSheet("QListWidget { border: none; }")  # the card is its frame
        self.list.itemClicked.connect(self._choose_item)
        self.list.itemActivated.connect(self._choose_item)
        column.addWidget(self.list, 1)
        self.note = QLabel(self)
        mark(self.note, "muted")
        self.note.setAccessibleName("Models shown")
        column.addWidget(self.note)
        column.addLayout(self._footer())
        library.listed.connect(self.show_rows)
        self.show_rows(library.rows)

    def _footer(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.open_button = give(QPushButton("Open a file…", self), "folder-open")
        self.discover_button = give(QPushButton("Find models online…", self), "cloud-search")
        self.manage_button = give(QPushButton("Manage models…", self), "cog")
        for button, signal in (
            (self.open_button, self.openFile),
            (self.discover_button, self.discover),
            (self.manage_button, self.manage),
        ):
            button.setAutoDefault(False)
            button.clicked.connect(self.close)
            button.clicked.connect(signal.emit)
            row.addWidget(button)
        row.insertStretch(2, 1)
        return row

    # --- showing -------------------------------------------------------------------------

    def popup(self, under: QWidget | None = None) -> None:
        """Show over the window, below `under` (kept inside the window), the search field
        focused, and reread the library."""
        host = self.parentWidget()
        if host is not None:
            width = min(600, max(host.width() - 24, 200))
            at = QPoint(12, 12)
            if under is not None:
                at = under.mapTo(host, QPoint(0, under.height() + 4))
            self.resize(width, self.height())
            self.move(max(8, min(at.x(), host.width() - width - 8)), max(0, at.y()))
            self._fit()
        shadow = QGraphicsDropShadowEffect(self)  # lifted above the conversation
        colour = theme.current().colour("text")
        colour.setAlpha(70)
        shadow.setColor(colour)
        shadow.setBlurRadius(24)
        shadow.setOffset(0, 4)
        self.setGraphicsEffect(shadow)
        focused = QApplication.focusWidget()
        inside = focused is not None and self.isAncestorOf(focused)
        self._return_to = None if inside else focused
        self._under = under
        self.search.clear()
        self.show()
        self.raise_()
        self.search.setFocus()
        app = QApplication.instance()
        if app is not None:
            app.installEventFilter(self)  # a click elsewhere closes it
        self.library.refresh()

    def hideEvent(self, event: QHideEvent) -> None:
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self)
        back, self._return_to = self._return_to, None
        focus = QApplication.focusWidget()
        if back is not None and (focus is None or focus is self or self.isAncestorOf(focus)):
            back.setFocus()  # closed from the keyboard: back where it was
        super().hideEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.close()
            return
        super().keyPressEvent(event)

    def show_rows(self, rows: list[Listed]) -> None:
        usable = [r for r in rows if r.entry.usable]
        loaded = self.loaded()
        order = {p: i for i, p in enumerate(self.library.recent)}  # read with the list
        usable.sort(key=lambda r: (r.entry.path != loaded, order.get(r.entry.path, len(order))))
        current = self.list.currentItem()
        keep = current.data(PATH) if current is not None else loaded
        self.list.clear()
        names = titles(usable)
        for row in usable:
            self.list.addItem(self._item(row, names[row.entry.path], row.entry.path == loaded))
        if not usable:
            note = QListWidgetItem("Reading your models…" if not rows else "No usable models yet.")
            note.setFlags(Qt.ItemFlag.NoItemFlags)
            self.list.addItem(note)
        self._filter(self.search.text(), keep)
        self._fit()

    def _fit(self) -> None:
        """As tall as its rows need (at most eight shown, at least three), inside the window."""
        host = self.parentWidget()
        rows = max(3, min(self.list.count(), 8))
        wanted = rows * max(self.list.sizeHintForRow(0), 40) + 130
        room = host.height() - self.y() - 12 if host is not None else wanted
        self.resize(self.width(), max(160, min(wanted, room)))

    def _item(self, row: Listed, title: str, loaded: bool) -> QListWidgetItem:
        badges = row.card.badges() if row.card is not None else ()
        facts, warn = facts_of(row, loaded)
        item = QListWidgetItem(describe(title, facts, badges, warn))
        item.setData(PATH, row.entry.path)
        item.setData(TITLE, title)
        item.setData(FACTS, facts)
        item.setData(WARN, warn)
        item.setData(BADGES, list(badges))
        words = [row.title, Path(row.entry.path).name, row.source, facts, *badges]
        item.setData(SEARCH, " ".join(words).lower())
        tips = [row.entry.path, row.memory.words(), *(BADGE_TIPS[b] for b in badges)]
        tips += [row.sees()] if row.sees() else []
        item.setToolTip("\n".join(tips))
        return item

    def _filter(self, text: str, keep: str | None = None) -> None:
        words = text.lower().split()
        shown = 0
        first: QListWidgetItem | None = None
        wanted: QListWidgetItem | None = None
        for i in range(self.list.count()):
            item = self.list.item(i)
            haystack = item.data(SEARCH)
            hide = haystack is not None and not all(w in haystack for w in words)
            item.setHidden(hide)
            if haystack is not None and not hide:
                shown += 1
                first = first or item
                if keep is not None and item.data(PATH) == keep:
                    wanted = item
        chosen = wanted or first
        if chosen is not None:
            self.list.setCurrentItem(chosen)
        total = sum(1 for i in range(self.list.count()) if self.list.item(i).data(SEARCH))
        if words and not shown:
            self.note.setText(f"No model matches “{text.strip()}”. Try Find models online…")
        else:
            self.note.setText(
                f"{shown} of {total} models · Enter loads · Esc closes"
                if words
                else f"{total} model{'s' * (total != 1)} · Enter loads · Esc closes"
            )

    # --- choosing ------------------------------------------------------------------------

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.MouseButtonPress and isinstance(watched, QWidget):
            if watched is self or self.isAncestorOf(watched):
                return False
            self.close()  # a click outside it
            return watched is self._under  # on the picker: closing is all it does
        if watched is self.search and isinstance(event, QKeyEvent):
            if event.type() == QEvent.Type.KeyPress and event.key() in _MOVES:
                self._move(event.key())
                return True
            if event.type() == QEvent.Type.KeyPress and event.key() in (
                Qt.Key.Key_Return,
                Qt.Key.Key_Enter,
            ):
                self.choose_current()
                return True
        return super().eventFilter(watched, event)

    def _move(self, key: int) -> None:
        visible = [
            self.list.item(i)
            for i in range(self.list.count())
            if not self.list.item(i).isHidden() and self.list.item(i).data(PATH)
        ]
        if not visible:
            return
        current = self.list.currentItem()
        at = visible.index(current) if current in visible else -1
        step = {Qt.Key.Key_Up: -1, Qt.Key.Key_Down: 1, Qt.Key.Key_PageUp: -5}.get(Qt.Key(key), 5)
        self.list.setCurrentItem(visible[max(0, min(len(visible) - 1, at + step))])

    def choose_current(self) -> None:
        item = self.list.currentItem()
        if item is not None and not item.isHidden():
            self._choose_item(item)

    def _choose_item(self, item: QListWidgetItem) -> None:
        path = item.data(PATH)
        if isinstance(path, str) and path:
            self.close()
            self.chosen.emit(path)


__all__ = ["ModelChooser"]
