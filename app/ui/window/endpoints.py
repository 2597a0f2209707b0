"""Remote endpoints in the window: the picker that says where a conversation is answered, and
the dialog that adds an endpoint with its key.

Guarantees: the picker always shows where the selected conversation's messages go ("This
computer", or ☁ and the endpoint's name) and changes it for that conversation only; the key
field never echoes, is emptied once the key is handed to the keyring, and its text is never
shown anywhere else; problems (an invalid field, a refused connection, no keyring) are said in
the dialog, which grows to show the sentence whole.
"""

from __future__ import annotations

from pydantic import ValidationError
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from app.controllers.chat import ChatController
from app.controllers.remote_host import RemoteHost
from app.domain.endpoint import Endpoint
from app.ui.window.screen_fit import grow_to_fit

LOCAL = "This computer"


def where(endpoint: str | None) -> str:
    """How a conversation's destination is shown (sidebar, picker, status bar)."""
    return LOCAL if endpoint is None else f"☁ {endpoint}"


class EndpointPicker(QComboBox):
    """Where the selected conversation is answered."""

    def __init__(self, controller: ChatController, remote: RemoteHost, parent: QWidget) -> None:
        super().__init__(parent)
        self.controller, self.remote = controller, remote
        self.setAccessibleName("Answered by")
        self.setToolTip("Where this conversation's messages are sent")
        self.activated.connect(self._chosen)
        remote.changed.connect(self.refresh)
        controller.docChanged.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        self.blockSignals(True)
        self.clear()
        self.addItem(LOCAL, None)
        names = [e.name for e in self.remote.endpoints]
        current = self.controller.doc.endpoint
        if current is not None and current not in names:
            names.append(current)  # gone from the settings: still shown, so it can be changed
        for name in names:
            self.addItem(where(name), name)
        self.setCurrentIndex(max(0, self.findData(current)) if current is not None else 0)
        self.blockSignals(False)

    def _chosen(self, index: int) -> None:
        self.controller.set_endpoint(self.itemData(index))


class EndpointDialog(QDialog):
    """Add (or replace) an endpoint, store its key in the keyring, test the connection."""

    def __init__(self, remote: RemoteHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.remote = remote
        self.setWindowTitle("Remote endpoint")
        form = QFormLayout(self)
        self.name = QLineEdit(self)
        self.base_url = QLineEdit(self)
        self.base_url.setPlaceholderText(
            "https://HOST/serving-endpoints  or  http://127.0.0.1:8000/v1"
        )
        self.model = QLineEdit(self)
        self.key_name = QLineEdit(self)
        self.key_name.setPlaceholderText("empty: the server needs no key")
        self.key = QLineEdit(self)
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText("stored in the system keyring, nowhere else")
        for label, field in (
            ("Name", self.name),
            ("Base URL", self.base_url),
            ("Model", self.model),
            ("Key name", self.key_name),
            ("API key", self.key),
        ):
            field.setAccessibleName(label)
            form.addRow(label, field)
        self.result_label = QLabel(self)
        self.result_label.setWordWrap(True)
        self.result_label.setAccessibleName("Endpoint status")
        form.addRow(self.result_label)
        self.test_button = QPushButton("Test connection", self)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Close, self
        )
        buttons.addButton(self.test_button, QDialogButtonBox.ButtonRole.ActionRole)
        form.addRow(buttons)
        self.test_button.clicked.connect(self._test)
        buttons.accepted.connect(self._save)
        buttons.rejected.connect(self.reject)
        remote.tested.connect(self._tested)
        remote.saved.connect(self._saved)
        remote.failed.connect(self._say)

    def endpoint(self) -> Endpoint | None:
        try:
            return Endpoint(
                name=self.name.text().strip(),
                base_url=self.base_url.text().strip().rstrip("/"),
                model=self.model.text().strip(),
                key_name=self.key_name.text().strip() or None,
            )
        except ValidationError as exc:
            fields = ", ".join(str(e["loc"][0]).replace("_", " ") for e in exc.errors())
            self._say(f"Check: {fields}.")
            return None

    def _test(self) -> None:
        endpoint = self.endpoint()
        if endpoint is not None:
            self._say("Testing…")
            self.remote.test(endpoint, self.key.text())

    def _save(self) -> None:
        endpoint = self.endpoint()
        if endpoint is not None:
            self.remote.add(endpoint, self.key.text())
            self.key.clear()  # handed to the keyring; not kept in the widget

    def _tested(self, ok: bool, report: str) -> None:
        self._say(("✓ " if ok else "✗ ") + report)

    def _saved(self, message: str) -> None:
        self._say(message)

    def _say(self, text: str) -> None:
        self.result_label.setText(text)
        grow_to_fit(self)  # a long report is shown whole, never clipped


__all__ = ["LOCAL", "EndpointDialog", "EndpointPicker", "where"]
