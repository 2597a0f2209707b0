"""Light and dark themes: the app's only colours, by role, and the one stylesheet built from them.

Guarantees: every colour a widget shows comes from the current `Theme` (no colour literal
elsewhere in `app/ui`; code's token colours come from the Pygments style the theme names);
`palette` and `stylesheet` are built from a theme alone, so the same theme always gives the
same look; `current` is the theme last put in force (by
`appearance.apply`, which owns the switch: palette, stylesheet and icons together); widgets
mark what they are with a `role` property (`error`, `ok`, `muted`, `card`, `bubble`,
`preamble`, `notice`, `code`, `action`, `starter`, ...) rather than colouring themselves; a
spin box draws its up and down arrows in both themes (drawn from small SVG files in the theme's
colours, written once per process into a temporary folder: `arrow_file`). This module imports
nothing of the app, so every view may import it.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QRect, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPalette
from PySide6.QtWidgets import QWidget

CHOICES = ("system", "light", "dark")


@dataclass(frozen=True)
class Theme:
    name: str
    window: str
    surface: str  # cards, the composer, the sidebar
    text: str
    muted: str
    accent: str
    accent_text: str
    border: str
    error: str
    ok: str
    bubble: str  # the user's messages
    code: str  # code blocks' background
    preamble: str
    notice: str
    special: str  # Harmony special tokens in the debug pane
    special_text: str
    code_style: str  # the Pygments style code blocks are coloured with (its token colours)

    def colour(self, role: str) -> QColor:
        return QColor(getattr(self, role))


LIGHT = Theme(
    "light",
    window="#f7f7f8",
    surface="#ffffff",
    text="#1f2328",
    muted="#59636e",
    accent="#2f6feb",
    accent_text="#ffffff",
    border="#d1d9e0",
    error="#b3261e",
    ok="#1a7f37",
    bubble="#e8effd",
    code="#f0f2f5",
    preamble="#f3eefc",
    notice="#fff5d6",
    special="#fff3b0",
    special_text="#7a4b00",
    code_style="default",
)
DARK = Theme(
    "dark",
    window="#16181d",
    surface="#1f2228",
    text="#e6e8eb",
    muted="#9aa3ad",
    accent="#4c8dff",
    accent_text="#0b0d10",
    border="#333842",
    error="#ff8a80",
    ok="#56d364",
    bubble="#25324a",
    code="#262a31",
    preamble="#2b2540",
    notice="#3a3220",
    special="#5a4a00",
    special_text="#ffe08a",
    code_style="github-dark",
)
_current = LIGHT


def current() -> Theme:
    return _current


def set_current(t: Theme) -> None:
    """Make `t` the theme views draw with (`appearance.apply` then restyles them)."""
    global _current
    _current = t


def stylesheet(t: Theme) -> str:
    return f"""
QWidget {{ color: {t.text}; }}
QMainWindow, QDialog {{ background: {t.window}; }}
*[role="error"] {{ color: {t.error}; }}
*[role="ok"] {{ color: {t.ok}; }}
*[role="muted"] {{ color: {t.muted}; }}
*[role="card"] {{ background: {t.surface}; border: 1px solid {t.border}; border-radius: 10px; }}
*[role="bubble"] {{ background: {t.bubble}; border-radius: 12px; padding: 8px 12px; }}
*[role="preamble"] {{ background: {t.preamble}; border-radius: 8px; }}
*[role="notice"] {{ background: {t.notice}; border-radius: 8px; padding: 6px 10px; }}
*[role="code"] {{ background: {t.code}; border-radius: 6px; }}
*[role="badge-ok"] {{ background: {t.ok}; color: {t.window}; padding: 2px 6px;
                     border-radius: 4px; }}
*[role="badge-error"] {{ background: {t.error}; color: {t.window}; padding: 2px 6px;
                        border-radius: 4px; }}
QPushButton {{ background: {t.surface}; border: 1px solid {t.border}; border-radius: 6px;
              padding: 4px 10px; }}
QPushButton:hover {{ border-color: {t.accent}; }}
QPushButton:disabled {{ color: {t.muted}; background: {t.window}; border-style: dashed; }}
QPushButton[role="primary"] {{ background: {t.accent}; color: {t.accent_text}; border: none; }}
QPushButton[role="stop"] {{ background: {t.error}; color: {t.window}; border: none;
                           font-weight: bold; }}
QPlainTextEdit, QTextEdit, QLineEdit, QListWidget, QComboBox, QSpinBox, QDoubleSpinBox {{
    background: {t.surface}; border: 1px solid {t.border}; border-radius: 6px; }}
QListWidget::item:selected {{ background: {t.bubble}; color: {t.text}; }}
{_spin_buttons(t)}QScrollArea#transcript {{ background: {t.window}; border: none; }}
QTextBrowser#answer {{ background: transparent; border: none; }}
QTextBrowser#preamble {{ border: none; }}
QToolButton[role="action"] {{ background: transparent; border: 1px solid transparent;
                             border-radius: 6px; padding: 1px; }}
QToolButton[role="action"]:hover {{ background: {t.code}; }}
QToolButton[role="action"]:focus {{ border-color: {t.accent}; }}
QPushButton[role="starter"] {{ text-align: left; padding: 9px 12px; border-radius: 10px; }}
QPushButton[role="starter"]:hover {{ background: {t.code}; }}
QWidget#header QToolButton {{ border: none; border-radius: 6px; padding: 4px 6px; }}
QWidget#header QToolButton:hover, QWidget#header QToolButton:checked {{
    background: {t.code}; }}
QFrame[role="composer"] {{ background: {t.surface}; border: 1px solid {t.border};
                          border-radius: 14px; }}
QFrame[role="composer"][focused="true"] {{ border-color: {t.accent}; }}
QFrame[role="composer"] QPlainTextEdit {{ background: transparent; border: none; }}
QFrame[role="composer"] QToolButton, QFrame[role="composer"] QComboBox {{
    background: transparent; border: none; border-radius: 6px; padding: 3px 5px; }}
QFrame[role="composer"] QToolButton:hover, QFrame[role="composer"] QComboBox:hover {{
    background: {t.code}; }}
QFrame[role="composer"] QToolButton:checked {{ background: {t.bubble}; color: {t.accent}; }}
QFrame[role="composer"] QToolButton:disabled {{ color: {t.muted}; }}
QFrame[role="composer"] QPushButton {{ border-radius: 8px; padding: 4px 12px; }}
QFrame[role="composer"] QScrollBar:vertical {{ background: transparent; width: 8px; }}
QFrame[role="composer"] QScrollBar::handle:vertical {{ background: {t.border}; min-height: 20px;
                                                     border-radius: 4px; }}
QFrame[role="composer"] QScrollBar::add-line:vertical, QFrame[role="composer"]
    QScrollBar::sub-line:vertical {{ height: 0; }}
*[role="chip"] {{ background: {t.code}; border: 1px solid {t.border}; border-radius: 8px; }}
*[role="chip"] QToolButton {{ padding: 1px; }}
"""


ARROW_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="5" viewBox="0 0 8 5">'
    '<path d="{path}" fill="{colour}"/></svg>'
)
ARROW_PATHS = {"up": "M0 5 L4 0 L8 5 Z", "down": "M0 0 L8 0 L4 5 Z"}
_arrows: tempfile.TemporaryDirectory[str] | None = None


def arrow_file(direction: str, colour: str) -> str:
    """A small triangle pointing `direction` ("up" or "down") in `colour`, as an SVG file the
    stylesheet can name (written once per process into a folder that goes with it; Qt's
    stylesheets take images from files only)."""
    global _arrows
    if _arrows is None:
        _arrows = tempfile.TemporaryDirectory(prefix="harmony-desk-arrows-")
    path = Path(_arrows.name) / f"{direction}-{colour.lstrip('#')}.svg"
    if not path.exists():
        path.write_text(ARROW_SVG.format(path=ARROW_PATHS[direction], colour=colour))
    return path.as_posix()


def _spin_buttons(t: Theme) -> str:
    """A spin box's up and down buttons with their arrows in the text colour (muted where the
    value is at its end, or the box is disabled): once a spin box has a border of the
    stylesheet's, the style draws its buttons and arrows only as the stylesheet says."""
    up, down = arrow_file("up", t.text), arrow_file("down", t.text)
    up_off, down_off = arrow_file("up", t.muted), arrow_file("down", t.muted)
    return f"""QAbstractSpinBox {{ padding-right: 18px; }}
QAbstractSpinBox::up-button, QAbstractSpinBox::down-button {{ subcontrol-origin: border;
    width: 18px; background: transparent; border: none; }}
QAbstractSpinBox::up-button {{ subcontrol-position: top right; margin-top: 2px; }}
QAbstractSpinBox::down-button {{ subcontrol-position: bottom right; margin-bottom: 2px; }}
QAbstractSpinBox::up-button:hover, QAbstractSpinBox::down-button:hover {{
    background: {t.code}; border-radius: 4px; }}
QAbstractSpinBox::up-arrow {{ image: url("{up}"); width: 8px; height: 5px; }}
QAbstractSpinBox::down-arrow {{ image: url("{down}"); width: 8px; height: 5px; }}
QAbstractSpinBox::up-arrow:disabled, QAbstractSpinBox::up-arrow:off {{ image: url("{up_off}"); }}
QAbstractSpinBox::down-arrow:disabled, QAbstractSpinBox::down-arrow:off {{
    image: url("{down_off}"); }}
"""


def palette(t: Theme) -> QPalette:
    p = QPalette()
    for role, colour in (
        (QPalette.ColorRole.Window, t.window),
        (QPalette.ColorRole.Base, t.surface),
        (QPalette.ColorRole.AlternateBase, t.code),
        (QPalette.ColorRole.Text, t.text),
        (QPalette.ColorRole.WindowText, t.text),
        (QPalette.ColorRole.Button, t.surface),
        (QPalette.ColorRole.ButtonText, t.text),
        (QPalette.ColorRole.Highlight, t.accent),
        (QPalette.ColorRole.HighlightedText, t.accent_text),
        (QPalette.ColorRole.PlaceholderText, t.muted),
        (QPalette.ColorRole.Link, t.accent),
        (QPalette.ColorRole.ToolTipBase, t.surface),
        (QPalette.ColorRole.ToolTipText, t.text),
    ):
        p.setColor(role, QColor(colour))
    return p


def mark(widget: QWidget, role: str) -> QWidget:
    """Give `widget` a theme role; the stylesheet colours it (restyled at once)."""
    widget.setProperty("role", role)
    widget.style().unpolish(widget)
    widget.style().polish(widget)
    return widget


def paint_row(painter: QPainter, box: QRect | QRectF, state: Any, radius: float) -> None:
    """A list row's background as the delegates draw it: the bubble colour when selected, the
    code colour under the pointer, nothing otherwise."""
    from PySide6.QtWidgets import QStyle

    if state & QStyle.StateFlag.State_Selected:
        fill = current().colour("bubble")
    elif state & QStyle.StateFlag.State_MouseOver:
        fill = current().colour("code")
    else:
        return
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(fill)
    painter.drawRoundedRect(box, radius, radius)


__all__ = [
    "CHOICES",
    "DARK",
    "LIGHT",
    "Theme",
    "arrow_file",
    "current",
    "mark",
    "paint_row",
    "palette",
    "set_current",
    "stylesheet",
]
