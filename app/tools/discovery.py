"""Finding tool plugins: pluggy hooks, the `harmony_desk.tools` entry points, built-in tools.

Guarantees: a plugin that fails to import, or whose hook raises, is reported (with its name
and the reason) and skipped; the rest load. Duplicate tool names are left to the registry,
which refuses them with a message saying how to resolve them.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pluggy

from app.tools.api import Tool

ENTRY_POINT_GROUP = "harmony_desk.tools"
hookspec = pluggy.HookspecMarker("harmony_desk")


class ToolSpec:
    """The hook a plugin implements."""

    @hookspec
    def harmony_desk_tools(self) -> list[Tool]:  # type: ignore[empty-body]
        """The tools this plugin offers."""


@dataclass
class Discovered:
    """What discovery found: tools by plugin name, and plugins that could not load."""

    tools: dict[str, list[Tool]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)


def _builtin() -> ModuleType:
    from app.tools.builtin import everyday

    return everyday


def _plugin_tools(name: str, module: Any) -> list[Tool]:
    manager = pluggy.PluginManager("harmony_desk")
    manager.add_hookspecs(ToolSpec)
    manager.register(module, name=name)
    found: list[Tool] = []
    for batch in manager.hook.harmony_desk_tools():
        found.extend(
            t if t.plugin != "built-in" or name == "built-in" else _with_plugin(t, name)
            for t in batch
        )
    return found


def _with_plugin(t: Tool, plugin: str) -> Tool:
    from dataclasses import replace

    return replace(t, plugin=plugin)


def discover(*, entry_points: bool = True) -> Discovered:
    """Every tool the installed plugins and the built-ins offer."""
    out = Discovered()
    everyday = _builtin()
    out.tools["built-in"] = [v for v in vars(everyday).values() if isinstance(v, Tool)]
    if not entry_points:
        return out
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            module = ep.load()
            out.tools[ep.name] = _plugin_tools(ep.name, module)
        except Exception as exc:
            out.failures[ep.name] = f"{type(exc).__name__}: {exc}"
    return out
