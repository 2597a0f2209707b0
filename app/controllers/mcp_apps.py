"""What an MCP App's view needs of the server behind it, through the window's MCP pool: whether a
tool has a view, the view's page, and the server's tools called for the view. The window's MCP
Apps widgets (`app/ui/mcp_apps/`) reach the tool side only through this module, which also
hands them the extension's pure pieces (`app/tools/mcp/apps*.py`).

Guarantees (every `PoolHost` method blocks: call it off the GUI thread):
- a tool's view and the view's page come from the server as it is now (`tools/list`,
  `resources/read`); a server that cannot answer is a `NoPage` with the pool's sentence;
- a call from a view reaches the server only after an approval under the conversation's tool
  choices (`WindowApprovals.server_request`, keyed like the model's calls of the same tool:
  "Always allow" or "Never" chosen on a tool card holds for the view too), asked through `ask`
  otherwise; a denied call, a tool the server does not list, a tool whose `visibility` leaves
  out "app", or a failed call is answered as a `CallToolResult` with `isError` and a sentence,
  never sent; each call from a view is written in the server's log with its outcome;
- a view reads its own server's resources through the host (`read`: the server's
  `ReadResourceResult`, or the sentence that says why not, past `MAX_READ_CHARS` included).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from app.tools.approval import Mode
from app.tools.calls import Decision, PendingCall
from app.tools.mcp import apps_protocol as wire
from app.tools.mcp.apps import AppPage, NoPage, app_page, view_uri, visibility
from app.tools.mcp.apps_csp import Csp, allowed, with_policy
from app.tools.mcp.client import McpError
from app.tools.mcp.config import server_identity
from app.tools.mcp.tools import HARD_CAP, function_name

if TYPE_CHECKING:
    from app.controllers.approvals import WindowApprovals
    from app.tools.mcp.tools import McpPool

MAX_READ_CHARS = 8 << 20  # a resource read for a view, as JSON
Answer = tuple[Mode | None, Decision]
Ask = Callable[[PendingCall], Answer]


class AppHost(Protocol):
    """The server side of one server's views."""

    server: str

    @property
    def identity(self) -> str: ...
    def view(self, tool: str) -> tuple[str, dict[str, Any]] | None: ...
    def page(self, uri: str) -> AppPage | NoPage: ...
    def call(self, tool: str, arguments: dict[str, Any], ask: Ask) -> dict[str, Any]: ...
    def read(self, uri: str) -> dict[str, Any] | str: ...
    def note(self, line: str) -> None: ...


def refusal(sentence: str) -> dict[str, Any]:
    """A `CallToolResult` that says why a view's call did not run."""
    return {"content": [{"type": "text", "text": sentence}], "isError": True}


class PoolHost:
    """`AppHost` over the window's pool, for server `server` of conversation `conversation()`."""

    def __init__(
        self,
        pool: McpPool,
        server: str,
        approvals: WindowApprovals,
        conversation: Callable[[], str],
    ) -> None:
        self.pool, self.server = pool, server
        self._approvals, self._conversation = approvals, conversation

    @property
    def identity(self) -> str:
        return server_identity(self.pool.server(self.server))

    def _listed(self) -> dict[str, Any]:
        return {str(t.name): t for t in self.pool.connection(self.server).tools()}

    def tool_of(self, function: str) -> str | None:
        """The server's own name of the tool the model calls as `function`."""
        for name in self._listed():
            if function_name(self.server, name) == function:
                return name
        return None

    def view(self, tool: str) -> tuple[str, dict[str, Any]] | None:
        """The `ui://` address of `tool`'s view and the tool as listed (JSON), or None."""
        listed = self._listed().get(tool)
        uri = view_uri(listed) if listed is not None else None
        if listed is None or uri is None:
            return None
        return uri, listed.model_dump(by_alias=True, exclude_none=True, mode="json")

    def page(self, uri: str) -> AppPage | NoPage:
        try:
            read = self.pool.connection(self.server).read_resource(uri)
        except McpError as exc:
            return NoPage(exc.message)
        return app_page(uri, read)

    def note(self, line: str) -> None:
        self.pool.note(self.server, line)

    def read(self, uri: str) -> dict[str, Any] | str:
        """The view's server's answer to reading `uri` (a `ReadResourceResult`), or why not: a
        view reads its own server's resources only, at most `MAX_READ_CHARS` of them."""
        try:
            read = self.pool.connection(self.server).read_resource(uri)
        except McpError as exc:
            return exc.message
        answer: dict[str, Any] = read.model_dump(by_alias=True, exclude_none=True, mode="json")
        if len(json.dumps(answer)) > MAX_READ_CHARS:
            return f"The resource {uri} is over {MAX_READ_CHARS // (1 << 20)} MiB: not passed on."
        self.note(f"{uri}: read by its app")
        return answer

    def call(self, tool: str, arguments: dict[str, Any], ask: Ask) -> dict[str, Any]:
        """The server's answer to a view's call of `tool` (see the module guarantees)."""
        try:
            listed = self._listed().get(tool)
            offered = dict(self.pool.offered(self.server))
        except McpError as exc:
            return refusal(exc.message)
        if listed is None or tool not in offered:
            return refusal(f"The server has no tool “{tool}”.")
        if "app" not in visibility(listed):
            return refusal(f"The tool “{tool}” is not for its app to call.")
        pending = PendingCall(f"app-{uuid.uuid4().hex[:12]}", offered[tool], arguments)
        decision = self._approvals.server_request(self._conversation(), pending, ask)
        if not decision.allow:
            self.note(f"{tool}: called by its app, {decision.how or 'denied'}")
            return refusal("The user did not allow this call.")
        return self._run(tool, decision, arguments)

    def _run(self, tool: str, decision: Decision, arguments: dict[str, Any]) -> dict[str, Any]:
        limit = self.pool.server(self.server).timeout
        try:
            connection = self.pool.connection(self.server)
            said = connection.call(
                tool, decision.arguments or arguments, limit * HARD_CAP, None, limit
            )
        except McpError as exc:
            self.note(f"{tool}: called by its app, {exc.code.value}")
            return refusal(exc.message)
        self.note(
            f"{tool}: called by its app ({decision.how}), {'error' if said.is_error else 'ok'}"
        )
        answer: dict[str, Any] = said.model_dump(by_alias=True, exclude_none=True, mode="json")
        return answer


__all__ = [
    "MAX_READ_CHARS",
    "Answer",
    "AppHost",
    "AppPage",
    "Ask",
    "Csp",
    "Decision",
    "Mode",
    "NoPage",
    "PendingCall",
    "PoolHost",
    "allowed",
    "refusal",
    "wire",
    "with_policy",
]
