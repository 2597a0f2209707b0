"""Run by `test_screen_fit.py` in a fresh process whose offscreen screen has the size asked
(Qt's offscreen platform reads it from a file): builds the window as the app does, opens its
dialogs, and prints, as JSON, the screen's available area, the window's and each dialog's
geometry, and the global rectangles of what must stay reachable (the composer, each dialog's
visible buttons)."""

from __future__ import annotations

import json
import os
from typing import Any

from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractScrollArea,
    QApplication,
    QScrollArea,
    QWidget,
)


def rect(widget: QWidget) -> list[int]:
    top_left = widget.mapToGlobal(QPoint(0, 0))
    return [top_left.x(), top_left.y(), widget.width(), widget.height()]


def geometry(widget: QWidget) -> list[int]:
    frame: QRect = widget.frameGeometry()
    return [frame.x(), frame.y(), frame.width(), frame.height()]


def settle(app: QApplication) -> None:
    for _ in range(10):
        app.processEvents()


def scrolls(widget: QWidget, dialog: QWidget) -> bool:
    """Whether `widget` lies in a scroll area of `dialog` (reached by scrolling)."""
    parent = widget.parentWidget()
    while parent is not None and parent is not dialog:
        if isinstance(parent, QAbstractScrollArea):
            return True
        parent = parent.parentWidget()
    return False


def dialog_facts(app: QApplication, dialog: QWidget) -> dict[str, Any]:
    """A dialog's place, its buttons outside scroll areas, and its scroll areas."""
    settle(app)
    buttons = [b for b in dialog.findChildren(QAbstractButton) if b.isVisible() and b.text()]
    fixed = {b.text(): rect(b) for b in buttons if not scrolls(b, dialog)}
    areas = [rect(a) for a in dialog.findChildren(QScrollArea) if a.isVisible()]
    return {"geometry": geometry(dialog), "buttons": fixed, "scroll_areas": areas}


def main() -> None:
    from app.controllers.bridge import EngineBridge
    from app.controllers.model_host import ModelHost
    from app.ui.app import application, build_window
    from app.ui.window.endpoints import EndpointDialog

    app = application()
    host = ModelHost(EngineBridge())
    host.use_scripted([])
    window = build_window(host)
    window.show()
    settle(app)
    facts: dict[str, Any] = {
        "available": list(window.screen().availableGeometry().getRect()),
        "window": geometry(window),
        "minimum": [window.minimumWidth(), window.minimumHeight()],
        "composer": rect(window.composer),
        "send": rect(window.composer.send),
        "dialogs": {},
    }
    remote = window.controller.remote
    opened = {
        "settings": window.show_settings,
        "mcp": window.show_mcp,
        "models": window.show_models,
        "endpoint": lambda: EndpointDialog(remote, window) if remote is not None else None,
    }
    for name, open_it in opened.items():
        dialog = open_it()
        if dialog is None:
            continue
        dialog.show()
        facts["dialogs"][name] = dialog_facts(app, dialog)
        dialog.close()
    print(json.dumps(facts), flush=True)
    window.close()
    host.close()
    os._exit(0)


if __name__ == "__main__":
    main()
