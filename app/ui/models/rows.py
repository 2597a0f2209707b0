"""How a model is drawn in a list: its name, a line of facts, and capability badges.

Guarantees: one look for every model list (the picker, Discover): the name on the first line,
the facts a person chooses by on the second (where it comes from, architecture, parameters,
quantisation, context, size — its image projector's added — and a memory warning in the theme's
error colour), badges (`tools`, `reasoning`, `vision`: it sees images; `base model`: it continues
text, not for chat, in the error colour) at the right, each in its
own theme colour; colours come from the current theme when painted (a theme switch repaints
them); the item's display text says all of it in words, for screen readers and for filtering.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import (
    QLineEdit,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
)

from app.controllers.library_host import Listed
from app.domain.library import Fit, human_count, human_size
from app.ui import theme

TITLE = Qt.ItemDataRole.UserRole + 1
FACTS = Qt.ItemDataRole.UserRole + 2
BADGES = Qt.ItemDataRole.UserRole + 3
WARN = Qt.ItemDataRole.UserRole + 4  # the part of the facts said in the error colour
BADGE_ROLES = {
    "tools": "accent",
    "reasoning": "special_text",
    "vision": "ok",
    "base model": "error",
}
BADGE_TIPS = {
    "tools": "Its chat template has a tool-call format: it can call the tools you turn on.",
    "reasoning": "It thinks before it answers (or takes a reasoning effort).",
    "vision": "It sees images: its image projector (an mmproj file) loads with it.",
    "base model": (
        "A base (completion) model: it continues the text you give it rather than answering;"
        " choose an instruction-tuned model to chat."
    ),
}
PAD, GAP = 10, 6


def name_clear_button(field: QLineEdit) -> None:
    """Turn on `field`'s clear button and name it for screen readers."""
    field.setClearButtonEnabled(True)
    for button in field.findChildren(QToolButton):
        button.setAccessibleName("Clear the search")


def context_words(n: int) -> str:
    """`8K context`, `128K context`, `512 context`."""
    if n <= 0:
        return ""
    return f"{n // 1024}K context" if n >= 1024 and n % 1024 == 0 else f"{n:,} context"


def facts_of(row: Listed, loaded: bool = False) -> tuple[str, str]:
    """The facts line of a library model, and the warning that ends it ("" when none)."""
    e = row.entry
    where = {"bundled": "Bundled", "recent": "Opened before"}.get(row.source, "")
    parts = [
        "In use" if loaded else "",
        where,
        e.architecture,
        human_count(e.parameters) if e.parameters else "",
        e.quantization,
        context_words(e.context_length),
        size_words(row),
    ]
    if not row.loadable_now:
        parts.append("prepared on first use")
    warn = {Fit.TOO_BIG: "will not fit in memory", Fit.TIGHT: "only just fits"}.get(
        row.memory.verdict, ""
    )
    return " · ".join(p for p in parts if p), warn


def size_words(row: Listed) -> str:
    """`4.1 GiB`, or `4.1 GiB + 851.0 MiB projector` for a model that sees images."""
    size = human_size(row.entry.file_size)
    return f"{size} + {human_size(row.projector_size)} projector" if row.projector else size


def titles(rows: list[Listed]) -> dict[str, str]:
    """Each row's name to show, by path: its title, with the file's name where two share one."""
    seen = Counter(r.title for r in rows)
    return {
        r.entry.path: r.title if seen[r.title] == 1 else f"{r.title} ({Path(r.entry.path).name})"
        for r in rows
    }


def compact(n: int) -> str:
    """`482K`, `1.2M`, `950`."""
    for unit, size in (("M", 1_000_000), ("K", 1_000)):
        if n >= size:
            value = n / size
            return f"{value:.1f}{unit}" if value < 10 else f"{value:.0f}{unit}"
    return str(n)


def describe(title: str, facts: str, badges: tuple[str, ...], warn: str) -> str:
    """The row in words (display text, accessible name, what the search matches)."""
    said = f"{title} — {facts}"
    if warn:
        said += f" — {warn}"
    if badges:
        said += f" — {', '.join(badges)}"
    return said


class ModelRowDelegate(QStyledItemDelegate):
    """Paints an item carrying TITLE, FACTS, BADGES and WARN (see the module guarantees)."""

    def sizeHint(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        line = QFontMetrics(option.font).height()
        return QSize(320, 2 * line + 2 * PAD)

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
    ) -> None:
        t = theme.current()
        title = index.data(TITLE)
        if title is None:  # a plain item (a note): drawn as Qt draws it
            super().paint(painter, option, index)
            return
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = option.rect.adjusted(2, 1, -2, -1)
        state = option.state
        theme.paint_row(painter, rect, state, 8)
        font = QFont(option.font)
        bold = QFont(font)
        bold.setBold(True)
        line = QFontMetrics(font).height()
        inner = rect.adjusted(PAD, PAD - 2, -PAD, -PAD + 2)
        right = self._badges(painter, font, inner, list(index.data(BADGES) or ()))
        painter.setFont(bold)
        painter.setPen(t.colour("text"))
        top = QRect(inner.left(), inner.top(), right - inner.left() - GAP, line)
        elided = QFontMetrics(bold).elidedText(str(title), Qt.TextElideMode.ElideRight, top.width())
        painter.drawText(top, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, elided)
        painter.setFont(font)
        metrics = QFontMetrics(font)
        facts, warn = str(index.data(FACTS) or ""), str(index.data(WARN) or "")
        bottom = QRect(inner.left(), inner.top() + line + 2, inner.width(), line)
        warn_width = metrics.horizontalAdvance(f" · {warn}") if warn else 0
        room = max(bottom.width() - warn_width, 40)
        text = metrics.elidedText(facts, Qt.TextElideMode.ElideRight, room)
        painter.setPen(t.colour("muted"))
        painter.drawText(bottom, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, text)
        if warn:
            painter.setPen(t.colour("error"))
            at = bottom.adjusted(metrics.horizontalAdvance(text), 0, 0, 0)
            painter.drawText(
                at, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, f" · {warn}"
            )
        painter.restore()

    @staticmethod
    def _badges(painter: QPainter, font: QFont, inner: QRect, badges: list[str]) -> int:
        """Draw the badges right-aligned on the first line; the x where they begin."""
        t = theme.current()
        small = QFont(font)
        small.setPointSizeF(max(font.pointSizeF() * 0.85, 7.0))
        metrics = QFontMetrics(small)
        painter.setFont(small)
        x = inner.right()
        height = metrics.height() + 2
        for name in reversed(badges):
            width = metrics.horizontalAdvance(name) + 12
            box = QRect(x - width, inner.top() + 1, width, height)
            colour = t.colour(BADGE_ROLES.get(name, "muted"))
            painter.setPen(QPen(colour, 1))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(box, height / 2, height / 2)
            painter.drawText(box, Qt.AlignmentFlag.AlignCenter, name)
            x -= width + 4
        return x


__all__ = [
    "ModelRowDelegate",
    "compact",
    "context_words",
    "describe",
    "facts_of",
    "name_clear_button",
    "size_words",
    "titles",
]
