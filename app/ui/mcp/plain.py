"""Labels and tooltips for text another party wrote (an MCP server's names, prompts, forms,
addresses, scopes): shown as plain text, inert.

Guarantees: `plain_label` makes a label whose text format is plain — Qt never reads its text
as rich text, so `<a href=…>` or `<img src=…>` a server wrote is shown as written, never as a
link or an image — and whose text went through `app.domain.inert` (controls, escapes and bidi
characters shown escaped, a long text cut with how much more there was); `set_plain` does the
same to a label made elsewhere; `plain_tip` gives a tooltip that shows its text as written
(tooltips have no plain-text format: the text is escaped inside rich text instead).
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from app.domain.inert import LIMIT, inert


def set_plain(label: QLabel, text: str, limit: int = LIMIT, *, lines: bool = False) -> None:
    """Show `text` in `label` as inert plain text (see the module guarantees)."""
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setText(inert(text, limit, lines=lines))


def plain_label(text: str, name: str = "", *, lines: bool = False, wrap: bool = True) -> QLabel:
    """A selectable, word-wrapped label showing `text` inert and plain."""
    label = QLabel()
    set_plain(label, text, lines=lines)
    if name:
        label.setObjectName(name)
    label.setWordWrap(wrap)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def plain_tip(text: str) -> str:
    """A tooltip that shows `text` inert and as written ("" for no tooltip)."""
    if not text:
        return ""
    return "<p>" + html.escape(inert(text, lines=True)).replace("\n", "<br>") + "</p>"


__all__ = ["plain_label", "plain_tip", "set_plain"]
