"""The tool registry: qualified names to tools, refusing silent overwrites.

Guarantees: two tools with the same qualified name are refused with a message naming both
plugins and how to resolve it (disable one, or register one under another name); the
`functions` namespace and other plugin namespaces render to the Harmony developer message;
the built-in `browser` and `python` namespaces render to the system message with the exact
text gpt-oss was trained on.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.domain.builtin_tools import browser_namespace, python_namespace
from app.domain.messages import DeveloperContent, ToolNamespaceConfig
from app.errors import HarmonyDeskError
from app.tools.api import Tool

SYSTEM_NAMESPACES = {"browser": browser_namespace, "python": python_namespace}


class DuplicateToolError(HarmonyDeskError):
    """Two tools claim the same qualified name."""


class ToolRegistry:
    """The tools enabled for a conversation."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, new: Tool) -> None:
        old = self._tools.get(new.qualified_name)
        if old is not None:
            raise DuplicateToolError(
                f"two tools are called {new.qualified_name!r}: one from {old.plugin}, one from"
                f" {new.plugin}; disable one of the plugins for this conversation, or register one"
                " with @tool(name=...) under another name"
            )
        self._tools[new.qualified_name] = new

    def get(self, qualified_name: str) -> Tool | None:
        return self._tools.get(qualified_name)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def namespaces(self) -> dict[str, ToolNamespaceConfig]:
        """The plugin namespaces and their tools, as the developer message declares them."""
        out: dict[str, list[Tool]] = {}
        for t in self._tools.values():
            if t.namespace not in SYSTEM_NAMESPACES:
                out.setdefault(t.namespace, []).append(t)
        return {
            ns: ToolNamespaceConfig(name=ns, tools=tuple(t.description_for_model() for t in tools))
            for ns, tools in out.items()
        }

    def developer_content(self, instructions: str | None = None) -> DeveloperContent:
        return DeveloperContent(instructions=instructions, tools=self.namespaces() or None)

    def system_namespaces(self) -> dict[str, ToolNamespaceConfig]:
        """The built-in namespaces present, as the Harmony system message declares them."""
        present = {t.namespace for t in self._tools.values()}
        return {ns: make() for ns, make in SYSTEM_NAMESPACES.items() if ns in present}
