"""The window's tools: the plugins found once for every conversation, and each conversation's
enabled tools (its python interpreter, its browser).

Guarantees: plugins are discovered once, on a background thread, and only trusted ones are
imported (in the plugin host); trusting one discovers again; a conversation's tools are built on
the engine thread on first use and closed when its tool choice, its offline mark or the
conversation itself goes away, and all of them when the window closes; MCP servers are one
pool for the whole window (started on first use, stopped when the window closes), whose
requests beside tool calls — sampling, elicitation — the window answers (`asks`,
`app/controllers/mcp_asks.py`).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from app.controllers.mcp_asks import WindowAsks
from app.controllers.mcp_context import follow_tool_changes
from app.tools.discovery import Discovered, discover
from app.tools.mcp.tools import MCP_PREFIX, McpPool
from app.tools.trust import PluginIdentity, TrustStore

if TYPE_CHECKING:  # a conversation's tools (python sandbox, browser) load at its first turn
    from app.domain.history import ChatDoc
    from app.tools.session import ConversationTools


class WindowTools:
    """The tool side of the window's controller (see the module guarantees)."""

    def __init__(self) -> None:
        self._tools: dict[str, ConversationTools] = {}
        self._plugins: list[str] | None = None
        self._found: Discovered | None = None
        self._lock = threading.Lock()
        self.asks = WindowAsks()  # what a server asks beside tool calls: sampling, input
        self.mcp = McpPool(hooks=self.asks.hooks(lambda: self.mcp))
        follow_tool_changes(self.mcp, lambda: list(self._tools.values()))  # list_changed

    def available(self) -> list[str]:
        """The built-ins, the trusted plugins (once they have been found) and the configured
        MCP servers (`mcp:NAME`)."""
        if self._plugins is None:
            self._plugins = []
            threading.Thread(target=self.discovered, name="plugin-discovery", daemon=True).start()
        servers = [MCP_PREFIX + n for n in self.mcp.configured()]
        return ["python", "browser", *self._plugins, *servers]

    def discovered(self) -> Discovered:
        with self._lock:
            if self._found is None:
                self._found = discover()
                self._plugins = sorted(self._found.tools)
            return self._found

    def pending(self) -> dict[str, PluginIdentity]:
        """Plugins found but not trusted (new, or changed since the user trusted them)."""
        found = self._found
        return dict(found.pending) if found is not None else {}

    def trust(self, name: str) -> None:
        """The user trusts this plugin as it is now: it is imported from the next discovery."""
        identity = self.pending().get(name)
        if identity is None:
            return
        TrustStore().trust(identity)
        with self._lock:
            if self._found is not None:
                self._found.close()
            self._found, self._plugins = None, None
        self.available()

    def of(self, doc: ChatDoc) -> ConversationTools:
        """The conversation's tools (call on the engine thread: discovery reads the disk)."""
        from app.tools.session import ConversationTools, ToolOptions

        tools = self._tools.get(doc.id)
        if tools is None:
            options = ToolOptions(enabled=doc.tools, offline=doc.offline)
            tools = ConversationTools(options, self.discovered(), self.mcp)
            self._tools[doc.id] = tools
        return tools

    def forget_server(self, name: str) -> None:
        """An MCP server's configuration changed: the conversations using it get its tools
        anew on their next turn (allow-list, schema, timeout as now configured)."""
        for doc_id, tools in list(self._tools.items()):
            if MCP_PREFIX + name in tools.options.enabled:
                self.forget(doc_id)

    def forget(self, doc_id: str) -> None:
        """The conversation's tools end (its choice changed, or it went to the trash)."""
        tools = self._tools.pop(doc_id, None)
        if tools is not None:
            tools.close()

    def close(self) -> None:
        for doc_id in list(self._tools):
            self.forget(doc_id)
        self.mcp.close()


__all__ = ["WindowTools"]
