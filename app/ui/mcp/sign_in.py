"""The sign-in row of an OAuth MCP server on File ▸ MCP servers…: its state, Sign in, Sign out.

Guarantees: the row shows only for a saved server that signs in with OAuth; its state ("Signed
in", with the scopes granted, "Not signed in", "Sign-in expired", "Wider sign-in asked" with the
scopes the server asked for — Sign in is then the person's agreement to them, and the earlier
sign-in stands until the new one arrives) is read off the GUI thread, as
is the sign-in, which opens the browser and waits for it (up to its deadline) without holding
the window, Sign in disabled until it ends (a client-credentials server signs in with no
browser, and the page says so); what comes of a sign-in or sign-out is said in the
page (its status line, or its problem banner with the details); a state that comes back for a
server no longer shown is dropped, and a keyring that cannot be read shows as an unknown state,
never as a loop of errors. What the authorization server chose (its scopes, its host) is shown
inert and as plain text (`app/ui/mcp/plain.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QWidget

from app.domain.inert import inert
from app.ui.mcp.plain import set_plain

if TYPE_CHECKING:
    from app.controllers.background import Background
    from app.controllers.mcp_host import McpHost, McpServer, SignIn


class SignInRow(QWidget):
    """See the module guarantees. It sits on the page (`parent`), reads the server's name from
    the page's name box, runs its work on the page's `jobs` and says what came of it with
    `say` (the page's status line)."""

    def __init__(
        self,
        name_box: QLineEdit,
        host: McpHost,
        jobs: Background,
        say: Callable[[str], None],
        parent: QWidget,
    ) -> None:
        super().__init__(parent)
        self.name_box, self.host, self.jobs, self.say = name_box, host, jobs, say
        self.no_person = False  # the shown server signs in with client credentials
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.state = QLabel("", self)
        self.state.setTextFormat(Qt.TextFormat.PlainText)
        self.state.setAccessibleName("Sign-in")
        self.sign_in_button = QPushButton("Sign in", self)
        self.sign_in_button.setToolTip("Sign in in the browser; the tokens go to the keyring")
        self.sign_out_button = QPushButton("Sign out", self)
        self.sign_out_button.setToolTip("Forget the tokens and the client registration")
        self.sign_in_button.clicked.connect(self.sign_in)
        self.sign_out_button.clicked.connect(self.sign_out)
        row.addWidget(self.state, 1)
        row.addWidget(self.sign_in_button)
        row.addWidget(self.sign_out_button)
        self.hide()

    def _name(self) -> str:
        return self.name_box.text().strip()

    def show_for(self, name: str, server: McpServer | None) -> None:
        """Show the row for `name` when it is a saved OAuth server (`server`: its saved
        configuration, None when it is not saved), and read its state."""
        self.setVisible(bool(server is not None and server.oauth))
        client = server.oauth_client if server is not None else None
        self.no_person = client is not None and client.grant == "client_credentials"
        how = "with its client credentials" if self.no_person else "in the browser"
        self.sign_in_button.setToolTip(f"Sign in {how}; the tokens go to the keyring")
        if server is None or not server.oauth:
            return
        host = self.host

        def read() -> SignIn | None:
            try:
                return host.sign_in(name)
            except Exception:  # a keyring that cannot be read: the state is unknown
                return None

        self.jobs.run(read, lambda sign: self._signed(name, sign))

    def _signed(self, name: str, sign: SignIn | None, said: str = "") -> None:
        if said:
            self.say(inert(said, lines=True))
        if self._name() != name:
            return
        if sign is None:
            self.state.setText("Sign-in state unknown (the keyring could not be read)")
            return
        shown = sign.wanted or sign.scopes  # a wider sign-in asked: the scopes it asks for
        scopes = f" (scopes: {shown})" if shown else ""
        set_plain(self.state, sign.state.value.capitalize() + scopes, 400)
        self.sign_in_button.setEnabled(True)
        self.sign_out_button.setEnabled(sign.state.value != "not signed in")

    def sign_in(self) -> None:
        name, host = self._name(), self.host
        self.sign_in_button.setEnabled(False)  # one sign-in at a time: one loopback receiver
        how = "with its client credentials" if self.no_person else "in your browser"
        self.say(f"Signing in to {name} {how}…")
        self.jobs.run(
            lambda: host.login(name), lambda sign: self._signed(name, sign, sign.sentence(name))
        )

    def sign_out(self) -> None:
        name, host = self._name(), self.host
        said = f"Signed out of {name}."
        self.jobs.run(lambda: host.logout(name), lambda s: self._signed(name, s, said))


__all__ = ["SignInRow"]
