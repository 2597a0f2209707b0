"""Where the transcript meets MCP Apps: a tool card of an MCP server's tool that declares a
`ui://` view gets that view below its contents once the call runs.

Guarantees: `follow(card, chat)` is cheap to call on every update of any card (nothing happens
for a card that is not an MCP tool's, or before its call runs); the first time an MCP tool's call
runs, a thread of its own asks the server whether the tool has a view and reads its page — never
the GUI thread; a tool with a view gets it (`McpAppView`) at the end of its card, told the call's
arguments and then its outcome as the card shows them; without Qt WebEngine, or when the page
cannot be shown, the card gets one line saying so instead; a tool without a view gets nothing.
Light to import (it is on the transcript's path): the MCP side loads with the first MCP card.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QLabel, QWidget

from app.ui import mcp_apps
from app.ui.theme import mark

if TYPE_CHECKING:
    from app.controllers.chat import ChatController
    from app.controllers.mcp_apps import AppPage, NoPage, PoolHost

SOURCE_PREFIX = "MCP "  # `app.tools.mcp.tools.plugin_label`
RAN = ("running", "ok", "error")


class _Follower(QObject):
    """One card's view, from the first look at the server to the call's outcome."""

    _found = Signal(object)  # (tool JSON, AppPage | NoPage) or None: from the look-up thread

    def __init__(self, card: QWidget, host: PoolHost) -> None:
        super().__init__(card)
        self.card, self.host = card, host
        self.view: Any = None
        self._told: set[str] = set()
        self._found.connect(self._show, Qt.ConnectionType.QueuedConnection)

    def start(self, function: str) -> None:
        threading.Thread(target=self._look, args=(function,), daemon=True).start()

    def _look(self, function: str) -> None:
        from app.controllers.mcp_apps import NoPage

        found: tuple[dict[str, Any], AppPage | NoPage] | None = None
        try:
            tool = self.host.tool_of(function)
            view = self.host.view(tool) if tool is not None else None
            if view is not None:
                found = view[1], self.host.page(view[0])
        except Exception as exc:  # the server went: the card keeps its text result
            found = {}, NoPage(f"The tool's view could not be read: {exc}")
        with contextlib.suppress(RuntimeError):  # the card went meanwhile
            self._found.emit(found)

    def _show(self, found: tuple[dict[str, Any], AppPage | NoPage] | None) -> None:
        from app.controllers.mcp_apps import NoPage

        if found is None:
            return
        tool, page = found
        layout = self.card.layout()
        if layout is None:
            return
        if isinstance(page, NoPage) or not mcp_apps.available():
            words = page.reason if isinstance(page, NoPage) else mcp_apps.UNAVAILABLE
            note = QLabel(words, self.card)
            note.setWordWrap(True)
            note.setAccessibleName("App view")
            mark(note, "muted")
            layout.addWidget(note)
            return
        from app.ui.mcp_apps.view import McpAppView  # Qt WebEngine: only once it is needed

        self.view = McpAppView(self.host, page, tool, self.card)
        layout.addWidget(self.view)
        self.update(getattr(self.card, "data", {}))

    def update(self, data: dict[str, Any]) -> None:
        from app.controllers.mcp_apps import wire

        if self.view is None:
            return
        state = str(data.get("state", ""))
        if state in RAN and "input" not in self._told:
            self._told.add("input")
            self.view.tell_input(_arguments(data.get("arguments")))
        if state in ("ok", "error") and "result" not in self._told:
            self._told.add("result")
            self.view.tell_result(wire.card_result(state, str(data.get("result", ""))))


def _arguments(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(str(text or "{}"))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def follow(card: QWidget, chat: ChatController) -> None:
    """See the module guarantees (`card` is a `ToolCard`)."""
    data: dict[str, Any] = getattr(card, "data", {})
    source = str(data.get("source", ""))
    if not source.startswith(SOURCE_PREFIX) or data.get("state") not in RAN:
        return
    follower = card.findChild(_Follower)
    if follower is None:
        from app.controllers.mcp_apps import PoolHost

        server = source.removeprefix(SOURCE_PREFIX)
        conversation: Callable[[], str] = lambda: chat.doc.id  # noqa: E731
        host = PoolHost(chat.tools.mcp, server, chat.approvals, conversation)
        follower = _Follower(card, host)
        follower.start(str(data.get("tool", "")).removeprefix("functions."))
    follower.update(data)


__all__ = ["follow"]
