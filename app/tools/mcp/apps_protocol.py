"""The host's side of the MCP Apps bridge (spec 2026-01-26) as pure functions: the JSON-RPC
messages a view sends and what the host answers, with the extension's exact method names.

Guarantees:
- `parse` takes any text a page sends and returns a `Message` or a `Malformed` with a reason:
  never an exception, whatever the text (not JSON, not JSON-RPC 2.0, too long, a method that is
  not a string, params that are not an object);
- the answers (`result`, `failure`, `notice`) are JSON-RPC 2.0 text; an answer's id is the
  request's, unchanged;
- `initialize_result` offers only what the host does: open links (asked), the server's tools
  (each call approved), its resources (read through the host, `resources/read`), logging, and
  the sandbox's CSP as enforced; never messages, model context, downloads or sampling (a view
  asking for them is answered "method not found");
- `card_result` turns a tool card's outcome (the text the model read) into the
  `CallToolResult` a view is told: an object is its `structuredContent` too, an error is
  `isError`; `link_allowed` accepts only http(s) addresses with a host; `bounded` keeps a
  size the view asks for within the host's limits.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from app import __version__
from app.tools.mcp.apps_csp import Csp

PROTOCOL_VERSION = "2026-01-26"
MAX_MESSAGE_CHARS = 4 << 20  # one message from a page

INITIALIZE = "ui/initialize"
INITIALIZED = "ui/notifications/initialized"
TOOL_INPUT = "ui/notifications/tool-input"
TOOL_RESULT = "ui/notifications/tool-result"
TOOL_CANCELLED = "ui/notifications/tool-cancelled"
HOST_CONTEXT_CHANGED = "ui/notifications/host-context-changed"
SIZE_CHANGED = "ui/notifications/size-changed"
OPEN_LINK = "ui/open-link"
MESSAGE = "ui/message"
DISPLAY_MODE = "ui/request-display-mode"
TEARDOWN = "ui/resource-teardown"
TOOLS_CALL = "tools/call"
RESOURCES_READ = "resources/read"
LOG = "notifications/message"
PING = "ping"

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
Id = str | int


@dataclass(frozen=True)
class Message:
    """A request (`id` set) or a notification (`id` None) from a view; or, with `method` "",
    the view's answer to a request of the host's (`answer` holds it)."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)
    id: Id | None = None
    answer: dict[str, Any] | None = None


@dataclass(frozen=True)
class Malformed:
    """Text from a page that is not a message the host can take; `id` when it had one."""

    reason: str
    id: Id | None = None


def _id(value: Any) -> Id | None:
    if isinstance(value, bool):
        return None
    return value if isinstance(value, str | int) else None


def parse(text: str) -> Message | Malformed:
    """A page's message (see the module guarantees)."""
    if len(text) > MAX_MESSAGE_CHARS:
        return Malformed(f"a message of {len(text)} characters (at most {MAX_MESSAGE_CHARS})")
    try:
        data = json.loads(text)
    except ValueError:
        return Malformed("not JSON")
    if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
        return Malformed("not JSON-RPC 2.0")
    ident = _id(data.get("id"))
    if "method" not in data:
        if ident is not None and ("result" in data or "error" in data):
            return Message("", id=ident, answer=data)
        return Malformed("neither a request nor an answer", ident)
    method, params = data["method"], data.get("params", {})
    if not isinstance(method, str):
        return Malformed("a method that is not a string", ident)
    if not isinstance(params, dict):
        return Malformed("params that are not an object", ident)
    return Message(method, params, ident)


def result(ident: Id, value: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "result": value}, ensure_ascii=False)


def failure(ident: Id | None, code: int, message: str) -> str:
    error = {"code": code, "message": message}
    return json.dumps({"jsonrpc": "2.0", "id": ident, "error": error}, ensure_ascii=False)


def notice(method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params}, ensure_ascii=False)


def host_context(
    theme: str,
    styles: dict[str, str],
    width: int,
    max_height: int,
    tool: dict[str, Any] | None = None,
    locale: str = "",
    time_zone: str = "",
) -> dict[str, Any]:
    """What the view is told of the host: theme, styles, its room, the tool that made it."""
    context: dict[str, Any] = {
        "theme": theme,
        "styles": {"variables": styles},
        "displayMode": "inline",
        "availableDisplayModes": ["inline"],
        "containerDimensions": {"width": width, "maxHeight": max_height},
        "platform": "desktop",
        "userAgent": f"Harmony Desk {__version__}",
        "deviceCapabilities": {"touch": False, "hover": True},
    }
    if tool is not None:
        context["toolInfo"] = {"tool": tool}
    if locale:
        context["locale"] = locale
    if time_zone:
        context["timeZone"] = time_zone
    return context


def _origins(origins: tuple[Any, ...]) -> list[str]:
    return [o.text() for o in origins]


def initialize_result(context: dict[str, Any], csp: Csp) -> dict[str, Any]:
    """The answer to `ui/initialize` (see the module guarantees)."""
    sandbox_csp = {
        "connectDomains": _origins(csp.connect),
        "resourceDomains": _origins(csp.resource),
        "frameDomains": _origins(csp.frame),
        "baseUriDomains": _origins(csp.base_uri),
    }
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "hostInfo": {"name": "Harmony Desk", "version": __version__},
        "hostCapabilities": {
            "openLinks": {},
            "serverTools": {},
            "serverResources": {},
            "logging": {},
            "sandbox": {"permissions": {}, "csp": sandbox_csp},
        },
        "hostContext": context,
    }


def card_result(state: str, text: str) -> dict[str, Any]:
    """A tool card's outcome as a `CallToolResult` (see the module guarantees)."""
    value: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if state == "error":
        value["isError"] = True
        return value
    try:
        structured = json.loads(text)
    except ValueError:
        return value
    if isinstance(structured, dict):
        value["structuredContent"] = structured
    return value


def call_params(params: dict[str, Any]) -> tuple[str, dict[str, Any]] | str:
    """A `tools/call`'s tool name and arguments, or why they are not usable."""
    name, arguments = params.get("name"), params.get("arguments", {})
    if not isinstance(name, str) or not name:
        return "the call names no tool"
    if not isinstance(arguments, dict):
        return "the call's arguments are not an object"
    return name, arguments


def link_allowed(url: Any) -> bool:
    """Whether `url` is an address the host may offer to open (http or https, with a host)."""
    if not isinstance(url, str) or len(url) > 8192:
        return False
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def bounded(value: Any, low: int, high: int) -> int | None:
    """A size the view asked for, within [low, high]; None when it is not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    return int(max(low, min(high, value)))


__all__ = [
    "INITIALIZE",
    "PROTOCOL_VERSION",
    "Malformed",
    "Message",
    "bounded",
    "call_params",
    "card_result",
    "failure",
    "host_context",
    "initialize_result",
    "link_allowed",
    "notice",
    "parse",
    "result",
]
