"""How the sidebar's rows are drawn: group headers, conversation titles, search excerpts.

Guarantees: a row never wraps and never scrolls sideways — its title is cut to the list's
width with "…" (the item keeps the whole title; its tooltip and accessible text say it whole);
a group header is drawn small, bold, in small capitals and in the theme's muted colour; a
conversation found by a search has a second line, the excerpt around the match, with the
matched words in bold; every colour comes from the current theme (`app.ui.theme`), so the
rows follow a theme switch at their next paint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics, QPainter
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from app.ui import theme

HEADER_ROLE = Qt.ItemDataRole.UserRole + 1  # True on a group header (and on a note)
FOUND_ROLE = Qt.ItemDataRole.UserRole + 2  # a search match's excerpt: [(text, emphasised)]
TITLE_ROLE = Qt.ItemDataRole.UserRole + 3  # the title as parts, when the match is in it alone
PAD_X, PAD_Y, GAP = 10, 6, 2
HEADER_ABOVE = 12  # room above a header that follows rows

Index = QModelIndex | QPersistentModelIndex


def cut(text: str, font: QFont, width: int) -> str:
    """`text` as drawn in `width` pixels: whole, or cut with "…" (the row's title, a part of
    its excerpt)."""
    return QFontMetrics(font).elidedText(text, Qt.TextElideMode.ElideRight, max(0, width))


def title_width(row: QRect) -> int:
    """The room a row's title has: the row less its margins."""
    return row.width() - 2 * PAD_X


def header_font(base: QFont) -> QFont:
    font = QFont(base)
    font.setBold(True)
    font.setCapitalization(QFont.Capitalization.SmallCaps)
    font.setPointSizeF(max(7.0, base.pointSizeF() * 0.9))
    return font


def excerpt_font(base: QFont, bold: bool = False) -> QFont:
    font = emphasised(base, bold)
    font.setPointSizeF(max(7.0, base.pointSizeF() * 0.9))
    return font


def emphasised(base: QFont, bold: bool) -> QFont:
    font = QFont(base)
    font.setBold(bold)
    return font


class RowDelegate(QStyledItemDelegate):
    """Draws the sidebar's rows (see the module guarantees)."""

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        font: QFont = option.font
        if index.data(HEADER_ROLE):
            above = HEADER_ABOVE if index.row() > 0 else 2
            return QSize(0, above + QFontMetrics(header_font(font)).height() + PAD_Y)
        height = QFontMetrics(font).height() + 2 * PAD_Y
        if index.data(FOUND_ROLE):
            height += GAP + QFontMetrics(excerpt_font(font)).height()
        return QSize(0, height)  # as wide as the list: never a sideways scroll

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        t = theme.current()
        rect: QRect = option.rect
        font: QFont = option.font
        state = option.state
        text = str(index.data(Qt.ItemDataRole.DisplayRole) or "")
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        if index.data(HEADER_ROLE):
            small = header_font(font)
            painter.setFont(small)
            painter.setPen(t.colour("muted"))
            line = rect.adjusted(PAD_X, 0, -PAD_X, -PAD_Y // 2)
            shown = cut(text, small, line.width())
            flags = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom
            painter.drawText(line, int(flags), shown)
            painter.restore()
            return
        box = rect.adjusted(3, 1, -3, -1)
        theme.paint_row(painter, box, state, 6)
        if state & QStyle.StateFlag.State_HasFocus and state & QStyle.StateFlag.State_Selected:
            painter.setPen(t.colour("accent"))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(box, 6, 6)
        width = title_width(rect)
        metrics = QFontMetrics(font)
        title = QRect(rect.left() + PAD_X, rect.top() + PAD_Y, width, metrics.height())
        in_title = index.data(TITLE_ROLE)
        if in_title:
            _parts(painter, in_title, title, lambda bold: emphasised(font, bold), "text")
        else:
            painter.setFont(font)
            painter.setPen(t.colour("text"))
            shown = cut(text, font, width)
            painter.drawText(title, int(_LEFT), shown)
        found = index.data(FOUND_ROLE)
        if found:
            line = QRect(title.left(), title.bottom() + 1 + GAP, width, metrics.height())
            _parts(painter, found, line, lambda bold: excerpt_font(font, bold), "muted")
        painter.restore()


_LEFT = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter


def _parts(
    painter: QPainter, parts: Any, line: QRect, font_of: Callable[[bool], QFont], colour: str
) -> None:
    """(text, emphasised) parts one after another in `line`, the emphasised ones in bold and
    the text colour, the others in `colour`; cut with "…" where the line ends."""
    t = theme.current()
    x, right = line.left(), line.right() + 1
    for text, bold in parts:
        font = font_of(bool(bold))
        metrics = QFontMetrics(font)
        room = right - x
        shown = cut(str(text), font, room)
        painter.setFont(font)
        painter.setPen(t.colour("text" if bold else colour))
        painter.drawText(QRect(x, line.top(), max(0, room), line.height()), int(_LEFT), shown)
        if shown != text:
            return
        x += metrics.horizontalAdvance(shown)


__all__ = [
    "FOUND_ROLE",
    "HEADER_ROLE",
    "TITLE_ROLE",
    "RowDelegate",
    "cut",
    "excerpt_font",
    "header_font",
    "title_width",
]
