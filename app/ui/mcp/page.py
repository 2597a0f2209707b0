"""File ▸ MCP servers…: add, edit, import, test, enable and watch the user's MCP servers.

Guarantees: nothing here blocks the window — reading and writing the configuration, the keyring
and starting a server happen off the GUI thread, and what comes back is said in the page — a
failure in the page's problem banner: the error's sentence, with its details (the server's
stderr, where a command was looked for) behind the banner's Details button; a secret's value is
typed into its own box, goes to the keyring when the server is saved and is never shown again
(the box keeps only its name; a blank value keeps the stored one); Test connection tries the
server as the form shows it, before Save as after (an unsaved or edited one in a pool of its own,
`app/controllers/mcp_trial.py`), and lists every
tool it offers with a check box (the allow-list), the prompt tokens the checked ones add, its
resources and prompts; the log shows the server's last events; "Use in this conversation"
enables it for the selected conversation only, and conversations using a server take its saved
changes on their next turn; an OAuth server shows its sign-in ("Signed in", "Not signed in",
"Sign-in expired", "Wider sign-in asked" with the scopes a server asked for) with Sign in (the
browser opens; the wait is off the GUI thread) and Sign out, and its OAuth client
(`client_box.py`: a pre-registered client id with its secret or private key for the keyring,
a client metadata URL, client credentials); an answer that comes back after the page has gone
is dropped.
"""

from __future__ import annotations

import shlex
from functools import partial
from pathlib import Path

from pydantic import ValidationError
from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.controllers.chat import ChatController
from app.controllers.mcp_host import MCP_PREFIX, McpHost, McpServer, Probe
from app.ui.mcp.client_box import ClientBox, read_key
from app.ui.mcp.page_jobs import EXAMPLES, FIELDS, PageJobs, named, pairs
from app.ui.mcp.plain import plain_label, plain_tip, set_plain
from app.ui.mcp.sign_in import SignInRow
from app.ui.problem_banner import ProblemBanner
from app.ui.start_folder import open_file
from app.ui.window.screen_fit import fit_dialog, scrolled

LOG_REFRESH_MS = 1000  # how often an open page reads the server's log again


class McpPage(QDialog):
    """See the module guarantees."""

    def __init__(self, host: McpHost, controller: ChatController, parent: QWidget) -> None:
        super().__init__(parent)
        self.host, self.controller = host, controller
        self.setWindowTitle("MCP servers")
        self.jobs = PageJobs(self)
        body = QWidget(self)  # all but the buttons: it scrolls on a small screen
        layout = QHBoxLayout(body)
        left = QVBoxLayout()
        self.servers = QListWidget(self)
        named(self.servers, "MCP servers")
        self.servers.currentTextChanged.connect(self.show_server)
        left.addWidget(self.servers)
        row = QHBoxLayout()
        self.add_button = QPushButton("Add", self)
        self.import_button = QPushButton("Import…", self)
        self.remove_button = QPushButton("Remove", self)
        named(
            self.import_button,
            "Import servers",
            "Servers from Claude Desktop, Cursor, LM Studio or VS Code",
        )
        pairs = (
            (self.add_button, self.new_server),
            (self.import_button, self.ask_import),
            (self.remove_button, self.ask_remove),
        )
        for button, slot in pairs:
            button.clicked.connect(slot)
            row.addWidget(button)
        left.addLayout(row)
        layout.addLayout(left, 1)
        layout.addLayout(self._form(), 2)
        outer = QVBoxLayout(self)
        outer.addWidget(scrolled(body, self), 1)
        outer.addLayout(self._buttons())
        fit_dialog(self, body.sizeHint() + QSize(40, 60))  # all of it where there is room
        self.refresh()

    def _form(self) -> QVBoxLayout:
        """The right-hand side: the server's fields, its OAuth client and sign-in, then what
        it offers and says."""
        right = QVBoxLayout()
        right.addLayout(self._fields())
        right.addWidget(self.client_box)
        self.sign_row = SignInRow(self.name, self.host, self.jobs, self.say, self)
        right.addWidget(self.sign_row)
        self._add_outputs(right)
        return right

    def _fields(self) -> QFormLayout:
        """The server's editable fields (`FIELDS`: labels and tooltips) and its OAuth rows."""
        form = QFormLayout()
        self.name = QLineEdit(self)
        self.where = QLineEdit(self)
        self.where.setPlaceholderText(
            "npx -y @modelcontextprotocol/server-memory   or   https://…/mcp"
        )
        self.env = QPlainTextEdit(self)
        self.secrets = QPlainTextEdit(self)
        self.headers = QPlainTextEdit(self)
        self.timeout = QDoubleSpinBox(self)
        self.timeout.setRange(1, 3600)
        self.timeout.setSuffix(" s")
        self.timeout.setValue(60)
        boxes = (self.name, self.where, self.env, self.secrets, self.headers, self.timeout)
        for box, (name, tip) in zip(boxes, FIELDS.items(), strict=True):
            named(box, name, tip)
            if isinstance(box, QPlainTextEdit):
                box.setFixedHeight(56)
                box.setPlaceholderText(EXAMPLES[name])
            form.addRow(name, box)
        self._oauth_rows(form)
        return form

    def _add_outputs(self, right: QVBoxLayout) -> None:
        """The server's tools, its use here, its log, and the status line and problem banner."""
        self.tools = QListWidget(self)
        named(self.tools, "Its tools", "Unchecked tools are never offered to the model")
        self.offers = QLabel("Test the connection to see what it offers.", self)
        self.offers.setWordWrap(True)
        self.use = QCheckBox("Use in this conversation", self)
        named(self.use, "Use in this conversation")
        self.use.toggled.connect(self._use)
        self.log = QPlainTextEdit(self)
        self.log.setReadOnly(True)
        named(self.log, "Server log")
        self._log_timer = QTimer(self)  # the server's log as it grows (its messages, restarts)
        self._log_timer.timeout.connect(self._show_log)
        self._log_timer.start(LOG_REFRESH_MS)
        self.status = plain_label("")  # what a server said shows as written (plain, inert)
        self.problem_banner = ProblemBanner(self)
        for label, widget in (
            ("Tools", self.tools),
            ("", self.offers),
            ("", self.use),
            ("Log", self.log),
            ("", self.status),
            ("", self.problem_banner),
        ):
            if label:
                right.addWidget(QLabel(label, self))
            right.addWidget(widget)

    def _buttons(self) -> QHBoxLayout:
        buttons = QHBoxLayout()
        self.save_button = QPushButton("Save", self)
        self.test_button = QPushButton("Test connection", self)
        self.close_button = QPushButton("Close", self)
        for button, slot in (
            (self.save_button, self.save),
            (self.test_button, self.test),
            (self.close_button, self.accept),
        ):
            button.clicked.connect(slot)
            buttons.addWidget(button)
        return buttons

    def _oauth_rows(self, form: QFormLayout) -> None:
        self.oauth = QCheckBox("Sign in with OAuth", self)
        named(
            self.oauth,
            "Sign in with OAuth",
            "A remote server that needs a sign-in in the"
            " browser; its tokens are kept in the keyring",
        )
        form.addRow("", self.oauth)
        self.client_box = ClientBox(self)  # who the app is to its authorization server
        self.client_box.hide()
        self.oauth.toggled.connect(self.client_box.setVisible)

    # --- what is shown ---------------------------------------------------------------------

    def say(self, text: str) -> None:
        self.problem_banner.hide()
        set_plain(self.status, text, lines=True)
        self._show_log()

    def problem(self, text: str, details: str = "") -> None:
        """A failure: its sentence in the problem banner, its details behind the disclosure."""
        self.status.setText("")
        self.problem_banner.show_problem(text, details)
        self._show_log()
        name = self.name.text().strip()  # a refused sign-in shows as such
        self.sign_row.show_for(name, getattr(self, "_config", {}).get(name))

    def refresh(self, select: str | None = None, said: str = "") -> None:
        """Read the configuration (off the GUI thread), list it, then say `said`."""
        self.jobs.run(self.host.servers, lambda servers: self._listed(servers, select, said))

    def _listed(self, servers: dict[str, McpServer], select: str | None, said: str) -> None:
        self._config = servers
        current = select or (self.servers.currentItem() and self.servers.currentItem().text())
        self.servers.blockSignals(True)
        self.servers.clear()
        self.servers.addItems(sorted(servers))
        self.servers.blockSignals(False)
        found = self.servers.findItems(str(current or ""), Qt.MatchFlag.MatchExactly)
        if found:
            self.servers.setCurrentItem(found[0])
        elif self.servers.count():
            self.servers.setCurrentRow(0)
        else:
            self.new_server()
        if said:
            self.say(said)

    def show_server(self, name: str) -> None:
        server = getattr(self, "_config", {}).get(name)
        if server is None:
            return
        self.name.setText(name)
        where = server.url if server.remote else shlex.join([str(server.command), *server.args])
        self.where.setText(str(where))
        self.env.setPlainText("\n".join(f"{k}={v}" for k, v in server.env.items()))
        hidden = (*server.secret_env, *server.secret_headers)
        self.secrets.setPlainText("\n".join(f"{k}=" for k in hidden))
        self.headers.setPlainText("\n".join(f"{k}={v}" for k, v in server.headers.items()))
        self.timeout.setValue(server.timeout)
        self.oauth.setChecked(server.oauth)
        self.client_box.show_for(server.oauth_client)
        self.client_box.setVisible(server.oauth)
        self.use.blockSignals(True)
        self.use.setChecked(MCP_PREFIX + name in self.controller.doc.tools)
        self.use.blockSignals(False)
        probe = self.host.probes.get(name)
        self._offered(probe) if probe is not None else self._unknown(server)
        self.status.setText("")
        self.problem_banner.hide()
        self._show_log()
        self.sign_row.show_for(name, server)

    def _unknown(self, server: McpServer) -> None:
        self.tools.clear()
        for own in server.enabled_tools or ():
            item = QListWidgetItem(own, self.tools)
            item.setCheckState(Qt.CheckState.Checked)
        self.offers.setText("Test the connection to see what it offers.")

    def _offered(self, probe: Probe) -> None:
        self.tools.clear()
        for own, description, allowed in probe.tools:
            item = QListWidgetItem(own, self.tools)
            item.setToolTip(plain_tip(description))
            item.setCheckState(Qt.CheckState.Checked if allowed else Qt.CheckState.Unchecked)
        self.offers.setText(
            f"{len(probe.tools)} tools; the checked ones add about {probe.tokens:,} tokens to"
            f" each prompt · {len(probe.resources)} resources · {len(probe.prompts)} prompts"
        )

    def _show_log(self) -> None:
        text = "\n".join(self.host.log(self.name.text().strip()))
        if text != self.log.toPlainText():  # unchanged: the reader's place and selection stay
            self.log.setPlainText(text)
            self.log.moveCursor(QTextCursor.MoveOperation.End)

    def new_server(self) -> None:
        self.servers.clearSelection()
        for box in (self.name, self.where, self.env, self.secrets, self.headers):
            box.clear()
        self.oauth.setChecked(False)
        self.client_box.show_for(None)
        self.sign_row.hide()
        self.tools.clear()
        self.offers.setText("Test the connection to see what it offers.")
        self.name.setFocus()

    # --- what the user does ----------------------------------------------------------------

    def server(self) -> tuple[str, McpServer, dict[str, str]]:
        """The form as a server and its secrets' values (a ValueError says what is wrong)."""
        name, where = self.name.text().strip(), self.where.text().strip()
        secrets = pairs(self.secrets.toPlainText())
        remote = where.startswith(("http://", "https://"))
        words = [] if remote else shlex.split(where)
        checked = [self.tools.item(i) for i in range(self.tools.count())]
        allowed = tuple(i.text() for i in checked if i.checkState() == Qt.CheckState.Checked)
        oauth = self.oauth.isChecked()
        try:
            server = McpServer.model_validate(
                {
                    "command": words[0] if words else None,
                    "args": tuple(words[1:]),
                    "env": pairs(self.env.toPlainText()),
                    "secret_env": () if remote else tuple(secrets),
                    "url": where if remote else None,
                    "headers": pairs(self.headers.toPlainText()),
                    "secret_headers": tuple(secrets) if remote else (),
                    "timeout": self.timeout.value(),
                    "enabled_tools": None if len(allowed) == len(checked) else allowed,
                    "oauth": oauth,
                    "oauth_client": self.client_box.client() if oauth else None,
                }
            )
        except ValidationError as exc:
            raise ValueError(str(exc.errors()[0]["msg"]).removeprefix("Value error, ")) from None
        return name, server, secrets

    def save(self) -> None:
        try:
            name, server, values = self.server()
        except ValueError as exc:
            self.problem(f"Not saved: {exc}")
            return
        self.secrets.setPlainText("\n".join(f"{k}=" for k in values))  # the values are gone
        secret, key_path = self.client_box.given()
        self.client_box.saved()
        client, host = server.oauth_client, self.host

        def save() -> None:  # off the GUI thread: the key file, the keyring, the file
            if client is not None and client.entry is not None and (secret or key_path):
                values[client.entry] = read_key(key_path) if key_path else secret
            host.save(name, server, values)

        self.jobs.run(save, lambda _: self._saved(name))

    def _saved(self, name: str) -> None:
        self.controller.tools.forget_server(name)  # conversations using it take the change
        self.refresh(name, f"{name} saved.")

    def test(self) -> None:
        """Test the server as the form shows it: saved or not, edited or not (`mcp_trial`)."""
        from app.controllers.mcp_trial import name_problem, try_server, unchanged

        try:
            name, server, values = self.server()
        except ValueError as exc:
            self.problem(f"Not tested: {exc}")
            return
        if problem := name_problem(name):
            self.problem(f"Not tested: {problem}")
            return
        if unchanged(getattr(self, "_config", {}).get(name), server, values):
            work = partial(self.host.probe, name)
        else:
            work = partial(try_server, self.host, name, server, values)
        self.say(f"Starting {name}…")
        self.jobs.run(work, lambda probe: self._tested(name, probe))

    def _tested(self, name: str, probe: Probe) -> None:
        if self.name.text().strip() == name:
            self._offered(probe)
        self.say(f"{name} answered: {len(probe.tools)} tools.")

    def _use(self, on: bool) -> None:
        name = MCP_PREFIX + self.name.text().strip()
        names = [n for n in self.controller.doc.tools if n != name]
        self.controller.set_tools(tuple([*names, name] if on else names))

    def ask_import(self) -> None:
        path = open_file(self, "Import MCP servers", "JSON (*.json)")
        if path:
            self.import_file(Path(path))

    def import_file(self, path: Path) -> None:
        def done(found: object) -> None:
            servers, moved = getattr(found, "servers", {}), getattr(found, "moved", ())
            said = f"Imported {len(servers)}: {', '.join(servers) or 'none'}."
            if moved:
                said += f" Moved to the keyring: {'; '.join(moved)}."
            self.refresh(said=said)

        self.jobs.run(lambda: self.host.import_file(path), done)

    def ask_remove(self) -> None:
        name = self.name.text().strip()
        answer = QMessageBox.question(self, "Remove server", f"Forget {name} and its secrets?")
        if answer == QMessageBox.StandardButton.Yes:
            self.jobs.run(lambda: self.host.remove(name), lambda _: self.refresh())


__all__ = ["McpPage"]
