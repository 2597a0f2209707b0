"""One MCP App view's conversation with the host: each message from the page answered per the
extension (`app.tools.mcp.apps_protocol`), the host's notices sent when the view can take them.

Guarantees:
- `ui/initialize` is answered with the host's context (theme, styles, room) and capabilities;
  after the page's `ui/notifications/initialized` (`ready`), the tool's input and then its result
  are sent once each, whichever came first, in that order; a later input or result is sent as
  it comes; `context_changed` sends the new theme and room;
- a `tools/call` runs on a thread of its own (`AppHost.call`: approval, then the server) and is
  answered when it ends, never on the GUI thread; while the approval waits the view asks through
  `Asker.ask_call`; a view that goes away answers what it was asking as denied;
- a `resources/read` runs on a thread of its own too (`AppHost.read`: its own server's
  resource) and is answered with the server's result or a JSON-RPC error saying why not;
- `ui/open-link` is answered `isError` for anything but an http(s) address, and otherwise only
  after the person's answer through `Asker.ask_link` (refused: `isError`);
- size changes are bounded and said as `resized`; log messages go to the server's log and
  `logged`; `ping` and `ui/request-display-mode` (inline, the only mode) are answered; any other
  request is "method not found", any other notification ignored; a malformed message with an
  id is answered with the JSON-RPC error, one without is dropped.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import threading
from collections.abc import Callable
from typing import Any, Protocol

from PySide6.QtCore import QObject, Qt, Signal

from app.controllers.mcp_apps import (
    Answer,
    AppHost,
    AppPage,
    Decision,
    PendingCall,
    refusal,
    wire,
)
from app.ui.mcp_apps.channel import Bridge

DENIED: Answer = (None, Decision(False, how="asked: denied (the view closed)"))
POLL_S = 0.1
MIN_HEIGHT, MAX_HEIGHT = 48, 720


class Asker(Protocol):
    """Where the view asks the person."""

    def ask_call(self, call: PendingCall, answer: Callable[[Answer], None]) -> None: ...
    def ask_link(self, url: str, answer: Callable[[bool], None]) -> None: ...


class AppSession(QObject):
    """See the module guarantees."""

    initialized = Signal()
    resized = Signal(int)  # the height the page asked for, bounded
    logged = Signal(object)  # a log message's params
    _hop = Signal(object)  # a function for the GUI thread

    def __init__(
        self,
        bridge: Bridge,
        host: AppHost,
        page: AppPage,
        tool: dict[str, Any],
        context: Callable[[], dict[str, Any]],
        asker: Asker,
    ) -> None:
        super().__init__(bridge)
        self.bridge, self.host, self.page, self.tool = bridge, host, page, tool
        self._context, self._asker = context, asker
        self.ready = False
        self._queued: dict[str, dict[str, Any]] = {}  # input, result: before `ready`
        self.closed = threading.Event()
        self._hop.connect(self._run, Qt.ConnectionType.QueuedConnection)
        bridge.received.connect(self.receive)
        self.destroyed.connect(self.closed.set)

    def _run(self, work: Callable[[], None]) -> None:
        work()

    # --- what the host tells the page ----------------------------------------------------

    def tell(self, method: str, params: dict[str, Any]) -> None:
        """A notice for the page; the tool's input and result wait for `ready`."""
        if not self.ready and method in (wire.TOOL_INPUT, wire.TOOL_RESULT):
            self._queued[method] = params
            return
        self.bridge.send(wire.notice(method, params))

    def context_changed(self) -> None:
        if self.ready:
            self.bridge.send(wire.notice(wire.HOST_CONTEXT_CHANGED, self._context()))

    def _answer(self, ident: wire.Id | None, value: dict[str, Any]) -> None:
        if ident is not None:
            self.bridge.send(wire.result(ident, value))

    def _fail(self, ident: wire.Id | None, code: int, message: str) -> None:
        if ident is not None:
            self.bridge.send(wire.failure(ident, code, message))

    # --- what the page says --------------------------------------------------------------

    def receive(self, text: str) -> None:
        message = wire.parse(text)
        if isinstance(message, wire.Malformed):
            self._fail(message.id, wire.INVALID_REQUEST, message.reason)
            return
        handler = self._handlers().get(message.method)
        if handler is not None:
            handler(message)
        elif message.id is not None and message.method:
            self._fail(message.id, wire.METHOD_NOT_FOUND, f"{message.method} is not offered")

    def _handlers(self) -> dict[str, Callable[[wire.Message], None]]:
        return {
            wire.INITIALIZE: self._initialize,
            wire.INITIALIZED: self._initialized,
            wire.TOOLS_CALL: self._call,
            wire.RESOURCES_READ: self._read,
            wire.OPEN_LINK: self._open_link,
            wire.SIZE_CHANGED: self._size,
            wire.LOG: self._log,
            wire.PING: lambda m: self._answer(m.id, {}),
            wire.DISPLAY_MODE: lambda m: self._answer(m.id, {"mode": "inline"}),
        }

    def _initialize(self, message: wire.Message) -> None:
        self._answer(message.id, wire.initialize_result(self._context(), self.page.csp))

    def _initialized(self, _message: wire.Message) -> None:
        if self.ready:
            return
        self.ready = True
        for method in (wire.TOOL_INPUT, wire.TOOL_RESULT):
            if method in self._queued:
                self.tell(method, self._queued.pop(method))
        self.initialized.emit()

    def _size(self, message: wire.Message) -> None:
        height = wire.bounded(message.params.get("height"), MIN_HEIGHT, MAX_HEIGHT)
        if height is not None:
            self.resized.emit(height)

    def _log(self, message: wire.Message) -> None:
        data = message.params.get("data")
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        self.host.note(f"its app says: {' '.join(str(text).split())[:500]}")
        self.logged.emit(message.params)

    def _open_link(self, message: wire.Message) -> None:
        url = message.params.get("url")
        if not wire.link_allowed(url):
            self._answer(message.id, {"isError": True})
            return

        def answered(opened: bool) -> None:
            self._answer(message.id, {} if opened else {"isError": True})

        self._asker.ask_link(str(url), answered)

    def _call(self, message: wire.Message) -> None:
        parsed = wire.call_params(message.params)
        if isinstance(parsed, str):
            self._fail(message.id, wire.INVALID_PARAMS, parsed)
            return
        name, arguments = parsed

        def work() -> None:
            try:
                said = self.host.call(name, arguments, self._ask_blocking)
            except Exception as exc:  # a bug in the host: the page still gets its answer
                said = refusal(f"The call failed: {exc}")
            self._later(lambda: self._answer(message.id, said))

        threading.Thread(target=work, name=f"mcp-app-call-{name}", daemon=True).start()

    def _read(self, message: wire.Message) -> None:
        uri = message.params.get("uri")
        if not isinstance(uri, str) or not uri:
            self._fail(message.id, wire.INVALID_PARAMS, "resources/read needs a uri")
            return

        def work() -> None:
            said = self.host.read(uri)
            if isinstance(said, str):
                self._later(lambda: self._fail(message.id, wire.INVALID_PARAMS, said))
            else:
                self._later(lambda: self._answer(message.id, said))

        threading.Thread(target=work, name="mcp-app-read", daemon=True).start()

    def _later(self, work: Callable[[], None]) -> None:
        """`work` on the GUI thread (from any thread); dropped once the view is gone."""
        if not self.closed.is_set():
            try:
                self._hop.emit(work)
            except RuntimeError:  # the view went between the check and the emit
                self.closed.set()

    def _ask_blocking(self, call: PendingCall) -> Answer:
        """On the call's thread: the person's answer, asked on the GUI thread."""
        future: cf.Future[Answer] = cf.Future()

        def answered(answer: Answer) -> None:
            if not future.done():
                future.set_result(answer)

        self._later(lambda: self._asker.ask_call(call, answered))
        while not self.closed.is_set():
            try:
                return future.result(POLL_S)
            except cf.TimeoutError:
                continue
        return DENIED


__all__ = ["MAX_HEIGHT", "MIN_HEIGHT", "AppSession", "Asker"]
