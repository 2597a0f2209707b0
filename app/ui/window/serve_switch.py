"""File ▸ Serve this model: the switch, and the status bar's word on the server.

Guarantees: switched on, the window's model is served at the address the status bar shows,
with the number of requests served so far (refreshed each second); a server that cannot start
says why and the switch goes back off; the server stops when switched off or when the window
closes.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel, QStatusBar, QWidget

from app.controllers.serve_host import ServeError, ServeHost


class ServeSwitch:
    """See the module guarantees. `window` owns the switch's action; `status` is its status bar."""

    def __init__(
        self, window: QWidget, status: QStatusBar, serving: ServeHost, port: int = 8080
    ) -> None:
        self.status, self.serving, self.port = status, serving, port
        self.action = QAction("Serve this model", window, checkable=True)
        self.action.setToolTip("An OpenAI-compatible server on 127.0.0.1 for other programs")
        self.action.toggled.connect(self.set_on)
        self.label = QLabel("", window)
        self.label.setAccessibleName("Local server")
        status.addPermanentWidget(self.label)
        self.timer = QTimer(window)
        self.timer.setInterval(1000)
        self.timer.timeout.connect(self.refresh)

    def set_on(self, on: bool) -> None:
        if not on:
            self.serving.stop()
            self.timer.stop()
            self.label.setText("")
            return
        try:
            self.serving.start(self.port)
        except ServeError as exc:
            self.status.showMessage(exc.message, 15_000)
            self.action.blockSignals(True)
            self.action.setChecked(False)
            self.action.blockSignals(False)
            return
        self.timer.start()
        self.refresh()

    def refresh(self) -> None:
        count = self.serving.requests()
        plural = "" if count == 1 else "s"
        self.label.setText(f"Serving at {self.serving.address} · {count} request{plural}")


__all__ = ["ServeSwitch"]
