"""A tool's name as a person reads it: `get_current_time · time`, not
`functions.time__get_current_time`.

The model calls an MCP server's tool by one function name, the server's name and the tool's
joined by `__` (`app/tools/mcp/tools.py::function_name`, each part with what is not a letter,
digit or `_` made `_`), in the `functions` namespace. A person wants the tool's own name and
the server it comes from.

Guarantees: `readable(tool, source, servers)` drops the `functions.` namespace; names an MCP
server's tool as "TOOL · SERVER" when the server is known — from `source` ("MCP time", what a
tool card carries) or from `servers` (the configured names), the longest matching name winning
— and, when the source is not said, when the name has the `SERVER__TOOL` shape; any other
tool keeps its name (`python`, `browser.search`, `calculate`). It never raises and never
returns "".
"""

from __future__ import annotations

import re
from collections.abc import Iterable

NAMESPACE = "functions."
SEPARATOR = "__"  # as `app/tools/mcp/tools.py` joins a server's name and its tool's
MCP_SOURCE = "MCP "  # what a card's source says of an MCP server (`plugin_label`)
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def _prefix(server: str) -> str:
    return _UNSAFE.sub("_", server) + SEPARATOR


def _known(name: str, servers: Iterable[str]) -> str | None:
    for server in sorted(servers, key=len, reverse=True):
        prefix = _prefix(server)
        if name.startswith(prefix) and len(name) > len(prefix):
            return f"{name[len(prefix) :]} · {server}"
    return None


def readable(tool: str, source: str = "", servers: Iterable[str] = ()) -> str:
    """`tool` (a call's recipient, e.g. "functions.time__get_current_time") as a person reads
    it (see the module guarantees)."""
    name = tool.removeprefix(NAMESPACE) or tool or "?"
    if not tool.startswith(NAMESPACE):
        return name
    named = [source.removeprefix(MCP_SOURCE)] if source.startswith(MCP_SOURCE) else []
    found = _known(name, [*named, *servers])
    if found is not None:
        return found
    server, sep, rest = name.partition(SEPARATOR)
    if sep and server and rest and not source:  # where it comes from is not said
        return f"{rest} · {server}"
    return name


__all__ = ["readable"]
