"""The OAuth client of a server on File ▸ MCP servers…: who the app is to the server's
authorization server (the `oauth_client` part of `mcp.json`).

Guarantees: the box shows only while "Sign in with OAuth" is ticked; it takes a client id the
server's owner issued with its token authentication (none, client_secret_basic,
client_secret_post, private_key_jwt), the client's secret (a password box, emptied once the
server is saved; a stored secret is never shown, and a blank box keeps it) or its private key
file (only its path is in the box; the file is read off the GUI thread when the server is
saved, and its key goes to the keyring), a Client ID Metadata Document's https URL, "No person
(client credentials)" with the issuer those credentials belong to, and scopes to ask for; only
the fields that fit the chosen authentication are enabled; `client` reads the form as the
configuration's fields (None when it is empty), which the server's validation judges.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QWidget,
)

from app.ui.mcp.page_jobs import named
from app.ui.start_folder import open_file

AUTHS = (
    ("none", "None (a public client, PKCE)"),
    ("basic", "Client secret, Basic (client_secret_basic)"),
    ("post", "Client secret, in the body (client_secret_post)"),
    ("private_key_jwt", "Private key (private_key_jwt)"),
)
KEY_BYTES = 64 * 1024  # a private key file larger than this is not one


def read_key(path: str) -> str:
    """A private key file's text (blocking: call it off the GUI thread); a ValueError in
    words for one that cannot be read or is not a small text file."""
    try:
        data = Path(path).expanduser().read_bytes()[: KEY_BYTES + 1]
        if len(data) > KEY_BYTES:
            raise ValueError("too large for a private key")
        return data.decode("ascii")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ValueError(f"the private key file {path} cannot be used ({reason})") from None


class ClientBox(QGroupBox):
    """See the module guarantees."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__("OAuth client (empty: the app registers itself)", parent)
        form = QFormLayout(self)
        self.client_id = QLineEdit(self)
        self.token_auth = QComboBox(self)
        for value, label in AUTHS:
            self.token_auth.addItem(label, value)
        self.secret = QLineEdit(self)
        self.secret.setEchoMode(QLineEdit.EchoMode.Password)
        self.secret.setPlaceholderText("Kept in the keyring; blank keeps the stored one")
        self.key_path = QLineEdit(self)
        self.key_path.setPlaceholderText("A PEM private key file; its key goes to the keyring")
        self.browse = QPushButton("Choose…", self)
        self.browse.clicked.connect(self._choose)
        key_row = QHBoxLayout()
        key_row.addWidget(self.key_path, 1)
        key_row.addWidget(self.browse)
        self.metadata_url = QLineEdit(self)
        self.metadata_url.setPlaceholderText("https://…/client.json (used where supported)")
        self.machine = QCheckBox("No person (client credentials)", self)
        self.issuer = QLineEdit(self)
        self.scope = QLineEdit(self)
        for widget, name, tip in (
            (self.client_id, "Client ID", "The client id the server's owner issued"),
            (self.token_auth, "Token authentication", "How the client proves itself"),
            (self.secret, "Client secret", "The secret the server's owner issued"),
            (self.key_path, "Private key", "For private_key_jwt: the client's PEM private key"),
            (self.metadata_url, "Client metadata URL", "A Client ID Metadata Document (SEP-991)"),
            (self.machine, "Client credentials", "A server that needs no person to sign in"),
            (self.issuer, "Issuer", "The authorization server the client id belongs to"),
            (self.scope, "Scopes", "Scopes to ask for at every sign-in"),
        ):
            named(widget, name, tip)
            form.addRow(name, key_row if widget is self.key_path else widget)
        self.token_auth.currentIndexChanged.connect(self._fit)
        self._fit()

    def _fit(self) -> None:
        auth = self.token_auth.currentData()
        self.secret.setEnabled(auth in ("basic", "post"))
        for widget in (self.key_path, self.browse):
            widget.setEnabled(auth == "private_key_jwt")

    def _choose(self) -> None:
        path = open_file(self, "The client's private key", "PEM (*.pem)")
        if path:
            self.key_path.setText(path)

    def show_for(self, client: Any) -> None:
        """Show a saved server's client (`oauth_client`, None when it has none)."""

        def get(key: str) -> str:
            return str(getattr(client, key, None) or "")

        self.client_id.setText(get("client_id"))
        self.token_auth.setCurrentIndex(max(0, self.token_auth.findData(get("token_auth"))))
        self.metadata_url.setText(get("metadata_url"))
        self.machine.setChecked(get("grant") == "client_credentials")
        self.issuer.setText(get("issuer"))
        self.scope.setText(get("scope"))
        self.secret.clear()
        self.key_path.clear()

    def client(self) -> dict[str, str] | None:
        """The configuration's `oauth_client` fields (None when the form is empty)."""
        fields = {
            "client_id": self.client_id.text().strip(),
            "token_auth": str(self.token_auth.currentData()),
            "metadata_url": self.metadata_url.text().strip(),
            "grant": "client_credentials" if self.machine.isChecked() else "",
            "issuer": self.issuer.text().strip(),
            "scope": self.scope.text().strip(),
        }
        given = {k: v for k, v in fields.items() if v and (k, v) != ("token_auth", "none")}
        return given or None

    def given(self) -> tuple[str, str]:
        """(the typed secret, the chosen key file's path); either may be blank."""
        secret = self.secret.text() if self.secret.isEnabled() else ""
        return secret, self.key_path.text().strip() if self.key_path.isEnabled() else ""

    def saved(self) -> None:
        """The server is saved: what was typed is gone from the box."""
        self.secret.clear()
        self.key_path.clear()


__all__ = ["ClientBox", "read_key"]
