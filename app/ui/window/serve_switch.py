"""File ▸ Serve this model: the quick switch, the status bar's word on the server, and the way to
File ▸ Serve… (the Serve page, `serve_page.py`).

Guarantees: switched on, the window's model is served at the address the status bar shows,
with the number of requests served so far (refreshed each second); a server that cannot start
says why (in the status bar, and in `problem` for the Serve page) and the switch goes back off;
the server stops when switched off or when the window closes. The Serve page is made when it is
first opened (its module is not loaded before), once, and drives this same switch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel, QStatusBar, QWidget

from app.controllers.serve_host import ServeError, ServeHost

if TYPE_CHECKING:
    from app.controllers.client_configs import ClientConfigs
    from app.ui.window.serve_page import ServePage


class ServeSwitch:
    """See the module guarantees. `window` owns the switch's action; `status` is its status bar."""

    def __init__(
        self, window: QWidget, status: QStatusBar, serving: ServeHost, port: int = 8080
    ) -> None:
        self.window, self.status, self.serving, self.port = window, status, serving, port
        self.problem = ""  # why the server last failed to start ("" when it did not)
        self.page: ServePage | None = None
        self.action = QAction("Serve this model", window, checkable=True)
        self.action.setToolTip("An OpenAI-compatible server on 127.0.0.1 for other programs")
        self.action.toggled.connect(self.set_on)
        self.page_action = QAction("Serve…", window)
        self.page_action.setToolTip("The local server: its address, its requests, coding agents")
        self.page_action.triggered.connect(lambda: self.show_page())
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
            self.problem = exc.message
            self.status.showMessage(exc.message, 15_000)
            self.action.blockSignals(True)
            self.action.setChecked(False)
            self.action.blockSignals(False)
            return
        self.problem = ""
        self.timer.start()
        self.refresh()

    def refresh(self) -> None:
        count = self.serving.requests()
        plural = "" if count == 1 else "s"
        self.label.setText(f"Serving at {self.serving.address} · {count} request{plural}")

    def show_page(self, configs: ClientConfigs | None = None) -> ServePage:
        """The Serve page, made on first use (with `configs`, the clients' files of the user
        they name; the process's user by default), shown and raised."""
        from app.ui.window.serve_page import ServePage

        if self.page is None:
            self.page = ServePage(self, configs, self.window)
        self.page.show()
        self.page.raise_()
        return self.page


__all__ = ["ServeSwitch"]
