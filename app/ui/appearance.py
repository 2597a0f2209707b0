"""Putting a theme in force: Qt's palette, the application stylesheet and the buttons' icons,
switched together, and the "system" choice kept in step with the OS.

Guarantees: `apply` sets the palette and the stylesheet together and redraws every icon, so a
switch repaints every open widget at once, and views that draw with theme colours themselves
(a `theme_changed` method) are told; "system" follows the OS colour scheme (Qt 6.5+
`QStyleHints.colorScheme`) and changes with it while the app runs (`follow_system`), and a
theme chosen by name is never overridden by the OS. This is the only module that changes
which theme is current; it sits above `theme` and `icons`, which never import it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from app.ui import theme
from app.ui.icons import recolour
from app.ui.theme import DARK, LIGHT, Theme

_choice = "system"


def resolve(choice: str, scheme: Qt.ColorScheme | None = None) -> Theme:
    """The theme `choice` means now: "system" asks the OS (or takes the `scheme` it just
    announced; light where it cannot say)."""
    if choice == "dark":
        return DARK
    if choice == "light":
        return LIGHT
    scheme = scheme if scheme is not None else QGuiApplication.styleHints().colorScheme()
    return DARK if scheme == Qt.ColorScheme.Dark else LIGHT


def apply(app: QApplication, choice: str, scheme: Qt.ColorScheme | None = None) -> Theme:
    """Use theme `choice` ("system", "light" or "dark") for the whole application."""
    global _choice
    chosen = resolve(choice, scheme)
    _choice = choice
    theme.set_current(chosen)
    app.setPalette(theme.palette(chosen))
    app.setStyleSheet(theme.stylesheet(chosen))
    recolour(app)  # the buttons' icons, in the new text colour
    for widget in app.allWidgets():
        refresh = getattr(widget, "theme_changed", None)
        if callable(refresh):
            refresh()  # views that draw with theme colours themselves (code, the token strip)
    return chosen


def follow_system(app: QApplication) -> None:
    """While the choice is "system", switch when the OS does."""

    def changed(scheme: Qt.ColorScheme) -> None:
        if _choice == "system":
            apply(app, _choice, scheme)

    QGuiApplication.styleHints().colorSchemeChanged.connect(changed)


__all__ = ["apply", "follow_system", "resolve"]
