"""What an MCP server asks of the window beside tool calls: sampling (a completion by the
conversation's model, after the user approves it) and elicitation (a form, or an address to
open), answered through the window's dialogs.

Guarantees: a request comes in on a thread of its own (`app/tools/mcp/sampling.py`,
`app/tools/mcp/elicit.py` bound it in time and audit it) and reaches the GUI thread as one
`asked` signal with a plain value (`Asked`); the dialog answers with `answer`, once; at the
deadline the request is `withdrawn` (the dialog goes) and a later answer is dropped. Where no
window shows the requests (`shown` false: nothing attached) a sampling request is refused and
a request for input declined, both saying so. A sampling request belongs to the conversation
being answered (else the one shown): it is approved under that conversation's tool approvals
(`WindowApprovals.server_request`) and answered by a fresh session over its model — the
model loaded here, or its remote endpoint (never for an offline conversation) — and refused
with a sentence when there is none. A cap on what servers may ask (`app/tools/mcp/caps.py`)
reached is said once, as `told` (the server's name, the sentence), for the window to show.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from PySide6.QtCore import QObject, Qt, Signal

from app.controllers.approvals import Answer
from app.controllers.remote_host import EndpointError
from app.domain.elicit_form import Form, Reply, UrlAsk
from app.errors import HarmonyDeskError
from app.tools.approval import Mode
from app.tools.calls import Decision, PendingCall
from app.tools.mcp.answers import asking_hooks
from app.tools.mcp.asks import Refusal
from app.tools.mcp.hooks import McpHooks
from app.tools.mcp.sampling import SampleAnswer, SampleRequest

if TYPE_CHECKING:
    from app.controllers.approvals import WindowApprovals
    from app.controllers.model_host import ModelHost
    from app.controllers.remote_host import RemoteHost
    from app.domain.history import ChatDoc
    from app.tools.mcp.tools import McpPool


class AskingChat(Protocol):
    """What a server's requests need of the chat controller: the conversation being answered
    (else the open one), its approvals, and the hosts a sampling request is answered on
    (passed in: never imported here)."""

    answering: ChatDoc | None
    doc: ChatDoc
    approvals: WindowApprovals
    host: ModelHost
    remote: RemoteHost | None


POLL_S = 0.05
GUI_S = 10.0  # the GUI thread answers a look-up within this, or it is taken as none
Choice = Literal["once", "chat", "always", "deny"]
CHOICES: dict[str, Answer] = {
    "once": (None, Decision(True, how="asked: allowed")),
    "chat": (Mode.ALLOW_CONVERSATION, Decision(True, how="asked: allow for this conversation")),
    "always": (Mode.ALWAYS, Decision(True, how="asked: always allow")),
    "deny": (None, Decision(False, how="asked: denied")),
}


@dataclass(frozen=True)
class SamplingAsk:
    """A sampling request as the approval dialog shows it."""

    server: str
    conversation: str  # its title
    system_prompt: str
    messages: tuple[tuple[str, str], ...]  # (role, text)
    max_tokens: int
    asked_tokens: int


@dataclass(frozen=True)
class Asked:
    """One request for the person: `what` is shown, `answer(id, …)` answers it (a `Choice`
    for a `SamplingAsk`, a `Reply` for a `Form` or a `UrlAsk`)."""

    id: str
    what: SamplingAsk | Form | UrlAsk


@dataclass(frozen=True)
class _Doc:
    endpoint: str | None
    offline: bool
    title: str


class WindowAsks(QObject):
    """See the module guarantees."""

    asked = Signal(object)  # an `Asked`
    withdrawn = Signal(str)  # its id: not answered in time
    capped = Signal(str, str)  # a server, and the sentence saying which cap it reached
    _hop = Signal(object)  # a function for the GUI thread

    def __init__(self) -> None:
        super().__init__()
        self.chat: AskingChat | None = None
        self.shown = False  # a window shows the requests (`app/ui/mcp/elicit_dialog.attach`)
        self._waiting: dict[str, cf.Future[Any]] = {}
        self._docs: dict[str, _Doc] = {}
        self._hop.connect(self._run, Qt.ConnectionType.QueuedConnection)

    def hooks(self, pool: Callable[[], McpPool]) -> McpHooks:
        """The hooks for the window's MCP pool (`pool()`: it, for its servers and logs); the
        window declares MCP Apps when Qt WebEngine is there to render them."""
        import dataclasses
        import importlib.util

        from app.tools.mcp.apps import extension

        renders = importlib.util.find_spec("PySide6.QtWebEngineWidgets") is not None
        return dataclasses.replace(asking_hooks(self, pool), extensions=extension(renders))

    # --- on the GUI thread ------------------------------------------------------------

    def _run(self, work: Callable[[], None]) -> None:
        work()

    def _show(self, asked: Asked, future: cf.Future[Any]) -> None:
        if not self.shown:
            future.set_result(None)
            return
        self._waiting[asked.id] = future
        self.asked.emit(asked)

    def answer(self, ident: str, value: Any) -> None:
        """The person's answer to request `ident` (a second one is dropped)."""
        future = self._waiting.pop(ident, None)
        if future is not None and not future.done():
            future.set_result(value)

    def _withdraw(self, ident: str) -> None:
        if self._waiting.pop(ident, None) is not None:
            self.withdrawn.emit(ident)

    def _current(self) -> str:
        chat = self.chat
        if chat is None:
            return ""
        doc = chat.answering or chat.doc
        self._docs[doc.id] = _Doc(doc.endpoint, doc.offline, doc.title)
        return doc.id

    # --- on a request's own thread ------------------------------------------------------

    def told(self, server: str, sentence: str) -> None:
        """A cap reached by `server`: said to the person once (`Telling`), on the GUI thread."""
        self._hop.emit(partial(self.capped.emit, server, sentence))

    def _on_gui(self, work: Callable[[], Any]) -> Any:
        future: cf.Future[Any] = cf.Future()

        def run() -> None:
            try:
                future.set_result(work())
            except Exception as exc:  # said to the waiting thread, never the GUI's crash dialog
                future.set_exception(exc)

        self._hop.emit(run)
        try:
            return future.result(GUI_S)
        except cf.TimeoutError:
            return None

    def _ask_person(self, what: SamplingAsk | Form | UrlAsk, cancel: threading.Event) -> Any:
        """The person's answer, or None: nobody to ask, or `cancel` came first (withdrawn)."""
        asked, future = Asked(uuid.uuid4().hex, what), cf.Future[Any]()
        self._hop.emit(partial(self._show, asked, future))
        while not cancel.is_set():
            try:
                return future.result(POLL_S)
            except cf.TimeoutError:
                continue
        self._hop.emit(partial(self._withdraw, asked.id))
        return None

    def _unanswered(self, cancel: threading.Event) -> str:
        return "not answered in time" if cancel.is_set() else "no window is open to ask"

    def conversation(self) -> str:
        return self._on_gui(self._current) or ""

    def approve(self, conversation: str, call: PendingCall, cancel: threading.Event) -> Decision:
        chat = self.chat
        if chat is None:
            return Decision(False, how="no window is open to ask")
        shown = call.arguments
        ask = SamplingAsk(
            server=call.tool.namespace.removeprefix("mcp:"),
            conversation=self._docs[conversation].title if conversation in self._docs else "",
            system_prompt=str(shown.get("system_prompt", "")),
            messages=tuple((m["role"], m["text"]) for m in shown.get("messages", ())),
            max_tokens=int(shown.get("max_tokens", 0)),
            asked_tokens=int(shown.get("asked_tokens", 0)),
        )

        def person(_call: PendingCall) -> Answer:
            choice = self._ask_person(ask, cancel)
            return CHOICES.get(choice, (None, Decision(False, how=self._unanswered(cancel))))

        return chat.approvals.server_request(conversation, call, person)

    def complete(
        self, conversation: str, request: SampleRequest, cancel: threading.Event
    ) -> SampleAnswer | Refusal:
        from app.engine.turn.mcp_sample import answer  # the engine loads with it

        chat, doc = self.chat, self._docs.get(conversation)
        if chat is None or doc is None:
            return Refusal("No conversation is open to answer the sampling request.")
        try:
            if doc.endpoint is not None:
                if doc.offline or chat.remote is None:
                    said = "The conversation is offline: its remote endpoint is not asked."
                    return Refusal(f"{said} Answer it on this computer instead.")
                remote = chat.remote.session(doc.endpoint, max_tokens=request.max_tokens)
                return answer(remote, request, remote.endpoint.model, cancel)
            host = chat.host
            if not host.ready:
                return Refusal(
                    f"No model is loaded to answer the sampling request of “{request.server}”."
                )
            local = host.session(max_tokens=request.max_tokens)
            return answer(local, request, Path(host.path).name or host.name, cancel)
        except (EndpointError, HarmonyDeskError) as exc:
            return Refusal(f"The model could not answer the sampling request: {exc.message}")

    def fill(self, form: Form, cancel: threading.Event) -> Reply:
        reply = self._ask_person(form, cancel)
        return reply if isinstance(reply, Reply) else Reply("decline", why=self._unanswered(cancel))

    def visit(self, ask: UrlAsk, cancel: threading.Event) -> Reply:
        reply = self._ask_person(ask, cancel)
        return reply if isinstance(reply, Reply) else Reply("decline", why=self._unanswered(cancel))


__all__ = ["CHOICES", "Asked", "AskingChat", "Choice", "SamplingAsk", "WindowAsks"]
