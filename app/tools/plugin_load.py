"""What a tool plugin offers, and how one is named across the plugin-host pipe.

A plugin is a module (or object) that implements the `harmony_desk_tools` pluggy hook of
`ToolSpec`; `plugin_tools` asks it for its tools. `PluginSpec` says where a trusted
plugin's code is, as plain values that the app sends the plugin host.

Guarantees: this module imports no plugin and starts no process; it is shared by discovery
(in the app) and by the plugin host's child process (`app/tools/plugin_child.py`), and
imports neither. A plugin's tools are marked with the plugin's name, except the built-ins'.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pluggy

from app.tools.api import Tool

ENTRY_POINT_GROUP = "harmony_desk.tools"
MAX_FRAME = 16 << 20  # the largest message either side of the plugin-host pipe reads
hookspec = pluggy.HookspecMarker("harmony_desk")


class ToolSpec:
    """The hook a plugin implements."""

    @hookspec
    def harmony_desk_tools(self) -> list[Tool]:  # type: ignore[empty-body]
        """The tools this plugin offers."""


@dataclass(frozen=True)
class PluginSpec:
    """Where a trusted plugin's code is: `target` is `module[:attribute]`, or "" for a file."""

    name: str
    kind: str  # "entry point", "folder" or "file"
    root: str
    target: str


def plugin_tools(name: str, module: Any) -> list[Tool]:
    """The tools a plugin module's hook returns (run inside the plugin host)."""
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
    return replace(t, plugin=plugin)


__all__ = ["ENTRY_POINT_GROUP", "MAX_FRAME", "PluginSpec", "ToolSpec", "hookspec", "plugin_tools"]
