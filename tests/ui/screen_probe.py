"""Run by `test_screen_fit.py` in a fresh process whose offscreen screen has the size asked
(Qt's offscreen platform reads it from a file): builds the window as the app does, opens its
dialogs, and prints, as JSON, the screen's available area, the window's and each dialog's
geometry, and the global rectangles of what must stay reachable (the composer, each dialog's
visible buttons). `probe` runs it (or `dialog_probe`) so for a test; `report` is the dialogs'
part both probes share."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractScrollArea,
    QApplication,
    QScrollArea,
    QWidget,
)

ROOT = Path(__file__).resolve().parents[2]


def probe(module: str, tmp_path: Path, width: int, height: int) -> dict[str, Any]:
    """Run `module` (this one or `dialog_probe`) in a fresh process on an offscreen screen of
    `width`×`height`; the JSON facts it prints."""
    screens = {"screens": [{"name": "probe", "x": 0, "y": 0, "width": width, "height": height,
                            "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}
    config = tmp_path / "screens.json"
    config.write_text(json.dumps(screens))
    env = {**os.environ, "QT_QPA_PLATFORM": f"offscreen:configfile={config}",
           "HARMONY_DESK_CONFIG": str(tmp_path / "config"), "HARMONY_DESK_DATA": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-m", module], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=240, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    facts: dict[str, Any] = json.loads(lines[-1])
    return facts


def inside(outer: list[int], inner: list[int]) -> bool:
    return QRect(*outer).contains(QRect(*inner))


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


def report(
    app: QApplication,
    window: Any,
    host: Any,
    facts: dict[str, Any],
    opened: Mapping[str, Callable[[], QWidget | None]],
    loaded: Callable[[QApplication, QWidget], None] | None = None,
) -> None:
    """Open each dialog in turn (one that opens as None is passed over; `loaded` waits for one
    that reads first), add its facts to `facts`, print them as JSON and end the process."""
    for name, open_it in opened.items():
        dialog = open_it()
        if dialog is None:
            continue
        dialog.show()
        if loaded is not None:
            loaded(app, dialog)
        facts["dialogs"][name] = dialog_facts(app, dialog)
        dialog.close()
    print(json.dumps(facts), flush=True)
    window.close()
    host.close()
    os._exit(0)


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
    report(app, window, host, facts, opened)


if __name__ == "__main__":
    main()
