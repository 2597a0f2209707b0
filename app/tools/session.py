"""The tools of one conversation: which plugins are enabled, and the built-ins' state.

Guarantees: a conversation gets exactly the tools it enabled — by plugin name (all its tools),
tool name, qualified name, `python` / `browser` for the built-ins, or `mcp:SERVER` for an MCP
server's tools (those its allow-list keeps) — and an unknown name is an error listing what
exists; an MCP server that cannot start is an error with its reason and stderr, and an offline
conversation refuses a remote one; the python sandbox and the browser's pages live as long as the
conversation's `ConversationTools` and are closed with it; an offline conversation's browser
cannot reach the network; the python sandbox never can.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from app.errors import HarmonyDeskError
from app.tools.api import Tool
from app.tools.browser.fetch import Fetcher
from app.tools.browser.search import DuckDuckGoSearch, SearchProvider, SearxngSearch
from app.tools.browser.tool import Browser, browser_tools
from app.tools.builtin.python import python_tool
from app.tools.discovery import Discovered, discover
from app.tools.mcp.client import McpError
from app.tools.mcp.tools import MCP_PREFIX, McpPool
from app.tools.registry import ToolRegistry
from app.tools.sandbox import PythonSandbox, SandboxLimits, unavailable_reason

BUILT_IN_NAMESPACES = ("python", "browser")


class UnknownToolError(HarmonyDeskError):
    """A conversation enables a tool or plugin that does not exist."""


@dataclass(frozen=True)
class ToolOptions:
    """A conversation's tool settings (saved with the conversation)."""

    enabled: tuple[str, ...] = ()
    offline: bool = False
    granted_folders: tuple[str, ...] = ()  # the python tool may read these
    writable_folders: tuple[str, ...] = ()  # ... and write these (never the app's own folders)
    search: Literal["duckduckgo", "searxng", "none"] = "duckduckgo"
    searxng_url: str = ""
    allow_private_addresses: bool = False  # the browser may open loopback and LAN addresses
    sandbox: SandboxLimits = field(default_factory=SandboxLimits)


class ConversationTools:
    """The registry of one conversation's enabled tools, and the state behind the built-ins."""

    def __init__(
        self, options: ToolOptions, found: Discovered | None = None, mcp: McpPool | None = None
    ) -> None:
        self.options = options
        self.found = found if found is not None else discover()
        self.mcp = mcp
        self.sandbox: PythonSandbox | None = None
        self.browser: Browser | None = None
        self.registry = ToolRegistry(self._resolve(options.enabled))

    def available(self) -> list[str]:
        """Every name a conversation may enable."""
        names = set(BUILT_IN_NAMESPACES) | set(self.found.tools)
        if self.mcp is not None:
            names |= {MCP_PREFIX + n for n in self.mcp.configured()}
        for tools in self.found.tools.values():
            names |= {t.name for t in tools} | {t.qualified_name for t in tools}
        return sorted(names)

    def _resolve(self, names: Iterable[str]) -> list[Tool]:
        chosen: dict[str, Tool] = {}
        missing: list[str] = []
        for name in dict.fromkeys(names):
            tools = self._named(name)
            if not tools:
                missing.append(name)
            for t in tools:
                chosen.setdefault(f"{t.plugin}:{t.qualified_name}", t)
        if missing:
            raise UnknownToolError(
                f"no tool or plugin called {', '.join(missing)}; available:"
                f" {', '.join(self.available())}"
            )
        return list(chosen.values())

    def _named(self, name: str) -> list[Tool]:
        if name.startswith(MCP_PREFIX) and self.mcp is not None:
            try:
                return self.mcp.tools(name.removeprefix(MCP_PREFIX), self.options.offline)
            except McpError as exc:
                raise UnknownToolError(exc.message) from None
        if name == "python":
            reason = unavailable_reason()
            if reason is not None:
                raise UnknownToolError(f"the python tool is unavailable: {reason}")
            return [python_tool(self._sandbox())]
        if name == "browser":
            return browser_tools(self._browser())
        if name in self.found.tools:
            return list(self.found.tools[name])
        return [
            t
            for tools in self.found.tools.values()
            for t in tools
            if name in (t.name, t.qualified_name)
        ]

    def _sandbox(self) -> PythonSandbox:
        if self.sandbox is None:
            self.sandbox = PythonSandbox(
                self.options.sandbox,
                granted=list(self.options.granted_folders),
                writable=list(self.options.writable_folders),
            )
        return self.sandbox

    def _browser(self) -> Browser:
        if self.browser is None:
            fetcher = Fetcher(
                offline=self.options.offline, allow_private=self.options.allow_private_addresses
            )
            provider: SearchProvider | None = None
            if self.options.search == "duckduckgo":
                provider = DuckDuckGoSearch(fetcher)
            elif self.options.search == "searxng" and self.options.searxng_url:
                provider = SearxngSearch(self.options.searxng_url, fetcher)
            self.browser = Browser(fetcher, provider)
        return self.browser

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None

    def __enter__(self) -> ConversationTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["ConversationTools", "ToolOptions", "UnknownToolError"]
