"""File ▸ Serve…: the window's local server on one page, and coding agents pointed at it.

Guarantees: the page shows whether the server is on (a switch that drives File ▸ Serve this
model, so both always agree) and its port (fixed while it runs), its address with a button that
copies it, the key (any key works: the server answers only this computer; connect writes the
placeholder), the model served, and the requests it is serving — served, waiting, and the
model's sequences busy and queued — refreshed each second while the page is shown. Each client
of `ClientConfigs.names()` has a row: Connect does what `harmony-desk connect CLIENT --base-url
ROOT --model MODEL` does for the server running now (the same code), Show config shows what it
would write (`--print`'s text, no key shown), Undo takes connect's changes out again; what each
did, and how to undo it, is shown on the page. Connect and Show config wait for the server to
be on. A failure (a file that cannot be read, a port in use) is said on the page, never raised
out of a slot. The page fits its screen: on a small one all but Close scrolls.
"""

from __future__ import annotations

from functools import partial
from typing import Protocol

from PySide6.QtCore import QSize, QTimer
from PySide6.QtGui import QAction, QGuiApplication, QHideEvent, QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.controllers.client_configs import ClientConfigs, Outcome, Served
from app.controllers.serve_host import ServeHost
from app.ui.window.screen_fit import fit_dialog, scrolled

KEY_WORDS = "any key works (this server answers only this computer)"
NOT_SERVING = "not serving: switch the server on first"


class Switch(Protocol):
    """What the page drives of File ▸ Serve this model (`ServeSwitch`)."""

    port: int
    action: QAction
    serving: ServeHost
    problem: str  # why the server last failed to start


class ServePage(QDialog):
    """See the module guarantees."""

    def __init__(
        self,
        switch: Switch,
        configs: ClientConfigs | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.switch, self.configs = switch, configs or ClientConfigs()
        self.setWindowTitle("Serve")
        body = QWidget(self)  # all but Close: it scrolls on a small screen
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._server_box())
        layout.addWidget(self._clients_box())
        self.error = QLabel("", self)
        self.error.setObjectName("error")
        self.error.setWordWrap(True)
        self.error.setProperty("role", "error")  # the theme's colour for errors
        self.error.hide()
        layout.addWidget(self.error)
        self.output = QPlainTextEdit(self)
        self.output.setReadOnly(True)
        self.output.setAccessibleName("What the last client button did")
        self.output.setPlaceholderText("What Connect, Show config or Undo did appears here.")
        layout.addWidget(self.output)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        close.rejected.connect(self.reject)
        outer = QVBoxLayout(self)
        outer.addWidget(scrolled(body, self), 1)
        outer.addWidget(close)
        fit_dialog(self, body.sizeHint() + QSize(40, 80))  # all of it where there is room
        self.timer = QTimer(self)
        self.timer.setInterval(1000)
        self.timer.timeout.connect(self.refresh)
        switch.action.toggled.connect(lambda _on: self.refresh())
        self.refresh()

    def _server_box(self) -> QGroupBox:
        box = QGroupBox("Local server", self)
        form = QFormLayout(box)
        self.on = QCheckBox("Serve this model", box)
        self.on.setToolTip("An OpenAI-compatible server on 127.0.0.1 for other programs")
        self.on.toggled.connect(self._switched)
        self.port = QSpinBox(box)
        self.port.setRange(1024, 65535)
        self.port.setValue(self.switch.port)
        self.port.setAccessibleName("Port")
        form.addRow(_row(self.on, 1, QLabel("Port", box), self.port))
        self.address = QLineEdit(box)
        self.address.setReadOnly(True)
        self.address.setAccessibleName("Address")
        self.copy = QPushButton("Copy", box)
        self.copy.setToolTip("Copy the address")
        self.copy.clicked.connect(self._copy)
        form.addRow("Address", _row(self.address, self.copy))
        self.key = QLabel(f"{KEY_WORDS}; connect writes “{self.configs.KEY}”", box)
        self.key.setWordWrap(True)
        form.addRow("Key", self.key)
        self.model = QLabel("", box)
        form.addRow("Model", self.model)
        self.requests = QLabel("", box)
        self.requests.setAccessibleName("Requests")
        form.addRow("Requests", self.requests)
        return box

    def _clients_box(self) -> QGroupBox:
        """A row per client: its title, Connect, Show config and Undo."""
        box = QGroupBox("Coding agents", self)
        grid = QGridLayout(box)
        self.connects: dict[str, QPushButton] = {}
        self.shows: dict[str, QPushButton] = {}
        self.undos: dict[str, QPushButton] = {}
        kinds = (
            (self.connects, "Connect", self.connect_client),
            (self.shows, "Show config", self.show_client),
            (self.undos, "Undo", self.undo_client),
        )
        for row, (name, title) in enumerate(self.configs.names().items()):
            grid.addWidget(QLabel(title, box), row, 0)
            for column, (kept, words, slot) in enumerate(kinds, start=1):
                kept[name] = button = QPushButton(words, box)
                button.setAccessibleName(f"{words} {title}")
                button.clicked.connect(partial(slot, name))
                grid.addWidget(button, row, column)
        return box

    # --- the server -----------------------------------------------------------------------

    def refresh(self) -> None:
        """The switch, address, model and counts as they are now."""
        serving = self.switch.serving
        running = serving.running and serving.served is not None
        self.on.blockSignals(True)
        self.on.setChecked(running)
        self.on.blockSignals(False)
        self.port.setEnabled(not running)
        self.address.setText(serving.address if running else "")
        self.copy.setEnabled(running)
        served = serving.served if running else None
        model = f"{served.name} (context {served.n_ctx:,} tokens)" if served else NOT_SERVING
        self.model.setText(model)
        self.requests.setText(self._counts() if running else "")
        for button in (*self.connects.values(), *self.shows.values()):
            button.setEnabled(running)
            button.setToolTip("" if running else NOT_SERVING)

    def _counts(self) -> str:
        served = self.switch.serving.served
        if served is None:
            return ""
        stats = served.stats
        words = [f"{stats['requests']:,} served", f"{stats['waiting']:,} waiting"]
        use = served.use() if served.use is not None else None
        if use is not None:
            words.append(f"sequences: {use.get('busy', 0)} busy, {use.get('queued', 0)} queued")
        return " · ".join(words)

    def _switched(self, on: bool) -> None:
        self.switch.port = self.port.value()
        self.switch.action.setChecked(on)  # the switch starts or stops the server
        self.refresh()
        self._said(Outcome(error=self.switch.problem if on and not self.on.isChecked() else ""))

    def _copy(self) -> None:
        QGuiApplication.clipboard().setText(self.address.text())

    def showEvent(self, event: QShowEvent) -> None:
        self.refresh()
        self.timer.start()
        super().showEvent(event)

    def hideEvent(self, event: QHideEvent) -> None:
        self.timer.stop()
        super().hideEvent(event)

    # --- the clients ----------------------------------------------------------------------

    def connect_client(self, name: str) -> None:
        """`harmony-desk connect NAME` for the server running now."""
        served = self._served()
        self._said(self.configs.connect(name, served) if served else _off())

    def show_client(self, name: str) -> None:
        """`harmony-desk connect NAME --print` for the server running now."""
        served = self._served()
        self._said(self.configs.show(name, served) if served else _off())

    def undo_client(self, name: str) -> None:
        """`harmony-desk connect NAME --undo`."""
        self._said(self.configs.undo(name))

    def _served(self) -> Served | None:
        serving = self.switch.serving
        model = serving.served
        if not serving.running or model is None:
            return None
        return Served(serving.address, model.name, model.n_ctx)

    def _said(self, outcome: Outcome) -> None:
        self.error.setText(outcome.error)
        self.error.setVisible(bool(outcome.error))
        if outcome.text:
            self.output.setPlainText(outcome.text)


def _row(*parts: QWidget | int) -> QHBoxLayout:
    """`parts` side by side (a number: a stretch of that factor)."""
    row = QHBoxLayout()
    for part in parts:
        if isinstance(part, int):
            row.addStretch(part)
        else:
            row.addWidget(part)
    return row


def _off() -> Outcome:
    return Outcome(error=NOT_SERVING)


__all__ = ["ServePage"]
