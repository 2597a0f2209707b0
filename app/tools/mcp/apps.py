"""MCP Apps (the `io.modelcontextprotocol/ui` extension, 2026-01-26): which tools have a view
of their own, and that view's page as the server serves it.

Guarantees:
- a tool has a view when its `_meta.ui.resourceUri` (or the older flat `_meta["ui/resourceUri"]`)
  is a `ui://` address; anything else — another scheme, a non-string, no `_meta` — is no view;
- a tool's `visibility` is what it declares of "model" and "app" (both when it declares none or
  nothing valid): the app may call a tool only when "app" is among them;
- a read view (`app_page`) is the first content of the read result with the MCP App type
  (`text/html;profile=mcp-app`), as text or base64; its CSP and border preference come from that
  content's `_meta.ui` (else from the resource's listed `_meta.ui`); a read that holds no such
  content, a page that is not UTF-8, or one past `MAX_PAGE_BYTES` is a `NoPage` with a sentence,
  never an exception;
- pure: no Qt, no I/O; the caller reads the resource through its MCP connection.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from app.tools.mcp.apps_csp import Csp, parse_csp

EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME = "text/html;profile=mcp-app"
URI_KEY = "ui/resourceUri"  # the flat key older servers still send beside `ui.resourceUri`
MAX_PAGE_BYTES = 1 << 20  # a view's page, as served (the web view takes at most 2 MB as a URL)
VISIBILITIES = ("model", "app")


@dataclass(frozen=True)
class AppPage:
    """A tool's view, ready to show: its address, its HTML, what it may load, and whether it
    asked for a border (None: it did not say)."""

    uri: str
    html: str
    csp: Csp
    prefers_border: bool | None = None


@dataclass(frozen=True)
class NoPage:
    """Why a view cannot be shown, in one sentence."""

    reason: str


def _meta(item: Any) -> dict[str, Any]:
    """An SDK object's or a plain mapping's `_meta` (an empty dict when it has none)."""
    if isinstance(item, dict):
        meta = item.get("_meta", item.get("meta"))
    else:
        meta = getattr(item, "meta", None)
    return meta if isinstance(meta, dict) else {}


def _ui(item: Any) -> dict[str, Any]:
    ui = _meta(item).get("ui")
    return ui if isinstance(ui, dict) else {}


def view_uri(tool: Any) -> str | None:
    """The `ui://` address of a listed tool's view, or None (see the module guarantees)."""
    uri = _ui(tool).get("resourceUri", _meta(tool).get(URI_KEY))
    if isinstance(uri, str) and uri.startswith("ui://") and len(uri) > len("ui://"):
        return uri
    return None


def extension(renders: bool) -> dict[str, dict[str, Any]]:
    """What a host declares of this extension when it connects: the app type it renders
    (nothing when it cannot render views: a server then sends only tools that work without)."""
    return {EXTENSION: {"mimeTypes": [APP_MIME]}} if renders else {}


def visibility(tool: Any) -> frozenset[str]:
    """Who may call a listed tool: "model", "app" (see the module guarantees)."""
    declared = _ui(tool).get("visibility")
    if isinstance(declared, list):
        chosen = frozenset(v for v in declared if v in VISIBILITIES)
        if chosen:
            return chosen
    return frozenset(VISIBILITIES)


def _field(item: Any, name: str, alias: str) -> Any:
    if isinstance(item, dict):
        return item.get(alias, item.get(name))
    return getattr(item, name, None)


def _page_text(item: Any) -> str | NoPage:
    text = _field(item, "text", "text")
    if isinstance(text, str):
        data = text.encode()
    else:
        try:
            data = base64.b64decode(str(_field(item, "blob", "blob") or ""), validate=True)
        except (binascii.Error, ValueError):
            return NoPage("The app's page is neither text nor valid base64.")
    if len(data) > MAX_PAGE_BYTES:
        size = f"{len(data) / (1 << 20):.1f} MiB"
        return NoPage(f"The app's page is too large to show here ({size}; at most 1 MiB).")
    try:
        return data.decode()
    except UnicodeDecodeError:
        return NoPage("The app's page is not UTF-8 text.")


def app_page(uri: str, read: Any, listed: Any = None) -> AppPage | NoPage:
    """The view at `uri` from its `resources/read` result (`listed`: its `resources/list`
    entry, whose `_meta.ui` is the fallback) — see the module guarantees."""
    for item in _field(read, "contents", "contents") or ():
        mime = str(_field(item, "mime_type", "mimeType") or "")
        if mime.replace(" ", "").lower() != APP_MIME:
            continue
        text = _page_text(item)
        if isinstance(text, NoPage):
            return text
        ui = _ui(item) or (_ui(listed) if listed is not None else {})
        border = ui.get("prefersBorder")
        return AppPage(
            uri=uri,
            html=text,
            csp=parse_csp(ui.get("csp")),
            prefers_border=border if isinstance(border, bool) else None,
        )
    return NoPage(f"The server gave no MCP App page ({APP_MIME}) for {uri}.")


__all__ = [
    "APP_MIME",
    "EXTENSION",
    "MAX_PAGE_BYTES",
    "AppPage",
    "NoPage",
    "app_page",
    "extension",
    "view_uri",
    "visibility",
]
