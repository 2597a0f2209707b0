"""Windows and dialogs that fit the screen they open on.

Guarantees: `first_geometry` is the window's first place on a screen's available area (the
desktop less its panels): the preferred 1100×760 where there is room, else the room there is
less the window's frame (title bar and borders), centred, never past an edge — on a 1366×768
laptop with a taskbar the composer is on the screen, and on a 640×480 one the minimum size
shrinks with it; `fit_window` applies it to a window before it is first shown. `fit_dialog`
keeps a dialog inside its screen's available area (it scrolls instead: see `scrolled`), and
`grow_to_fit` lets a dialog grow, never shrink, to show a wrapped label's every line.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget

PREFERRED = QSize(1100, 760)
FRAME = QSize(16, 48)  # a title bar and borders, before the window manager says
SMALLEST = QSize(640, 480)


def first_geometry(available: QRect, frame: QSize = FRAME) -> QRect:
    """The window's first geometry (its client area) on `available` (see the guarantees)."""
    room = QSize(available.width() - frame.width(), available.height() - frame.height())
    size = PREFERRED.boundedTo(room)
    left = available.x() + max(0, (available.width() - size.width() - frame.width()) // 2)
    top = available.y() + max(0, (available.height() - size.height() - frame.height()) // 2)
    return QRect(
        left + frame.width() // 2, top + frame.height() - frame.width() // 2, *size.toTuple()
    )


def fit_window(window: QWidget) -> None:
    """Size and place `window` on its screen before it is first shown."""
    screen = window.screen()
    if screen is None:
        return
    place = first_geometry(screen.availableGeometry())
    window.setMinimumSize(SMALLEST.boundedTo(place.size()))
    window.setGeometry(place)


def fit_dialog(dialog: QWidget, wanted: QSize | None = None) -> None:
    """Size `dialog` before it is shown: `wanted` (else the size it was given, else its size
    hint), within its screen's available area less a frame."""
    screen = dialog.screen()
    if screen is None:
        return
    if wanted is None:
        resized = dialog.testAttribute(Qt.WidgetAttribute.WA_Resized)
        wanted = dialog.size() if resized else dialog.sizeHint()
    room = screen.availableGeometry().size() - FRAME
    dialog.resize(wanted.expandedTo(dialog.minimumSizeHint()).boundedTo(room))


def grow_to_fit(dialog: QWidget) -> None:
    """Let `dialog` grow (never shrink) to the height its layout needs at its width now."""
    layout = dialog.layout()
    if layout is None:
        return
    layout.activate()
    needed = layout.totalHeightForWidth(dialog.width())
    if needed < 0:
        needed = layout.totalSizeHint().height()
    if needed > dialog.height():
        dialog.resize(dialog.width(), needed)


def scrolled(content: QWidget, parent: QWidget) -> QScrollArea:
    """`content` in a frameless scroll area that scrolls up and down only (a tall form on a
    small screen), its width following the area's."""
    area = QScrollArea(parent)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidgetResizable(True)
    area.setWidget(content)
    return area


__all__ = ["first_geometry", "fit_dialog", "fit_window", "grow_to_fit", "scrolled"]
