"""Icons for the window's buttons: Material Design Icons from the bundled `qtawesome` package
(MIT; its icon fonts ship inside it, so nothing is fetched), drawn in the theme's text colour.

Guarantees: `give(button, name)` sets the icon and remembers its name on the button, so a
theme switch redraws every icon in the new colour (`recolour`, called by `appearance.apply`); a
button keeps its text and accessible name, an icon only adds to them; an unknown icon name is
an empty icon, never an error.
"""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QAbstractButton, QApplication

from app.ui import theme

PROPERTY = "icon_name"


def icon(name: str) -> QIcon:
    import qtawesome

    try:
        drawn: QIcon = qtawesome.icon(f"mdi6.{name}", color=theme.current().text)
        return drawn
    except Exception:  # an icon the font does not have: no icon rather than no button
        return QIcon()


B = TypeVar("B", bound=QAbstractButton)


def give(button: B, name: str) -> B:
    button.setProperty(PROPERTY, name)
    button.setIcon(icon(name))
    return button


def recolour(app: QApplication) -> None:
    """Every button with an icon, drawn again in the current theme's colour."""
    for widget in app.allWidgets():
        name = widget.property(PROPERTY)
        if isinstance(widget, QAbstractButton) and isinstance(name, str):
            widget.setIcon(icon(name))


__all__ = ["give", "icon", "recolour"]
