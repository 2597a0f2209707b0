"""What an MCP App's page may reach: the origins its resource declares (`_meta.ui.csp`), as the
Content-Security-Policy the page is given and as the test every request of the page must pass.

Guarantees:
- a declared origin is taken only as `scheme://host[:port]` (scheme http, https, ws or wss;
  host a DNS name, optionally behind one `*.` wildcard, an IPv4 address or a bracketed IPv6
  one; an optional trailing `/`); anything else — a path, a query, a bare `*`, a quote, a `;`
  or a space that would add a directive — is dropped and named in `dropped`, never written into
  the policy;
- undeclared means none: no connect, resource or frame origin; the policy's default is
  `'none'`, objects and form posts are refused, inline script and style are allowed (an app's
  page is one self-contained file), and `data:`/`blob:` only for images, fonts and media;
- `allowed(csp, url)` is true only for a URL whose scheme, host and port match a declared
  origin (a `*.` wildcard matches subdomains, never the bare domain); default ports count
  (`https://x` matches `https://x:443/…`). It is the same test for every kind of request: the
  browser's own CSP check sorts requests by kind, this one refuses all that no declaration names;
- `with_policy` puts the policy into the page before any of the page's own markup.
"""

from __future__ import annotations

import html
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any

_DOCTYPE = re.compile(r"^\ufeff?\s*<!doctype[^>]*>", re.IGNORECASE)
_ORIGIN = re.compile(
    r"^(?P<scheme>https?|wss?)://"
    r"(?P<host>(?:\*\.)?[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*"
    r"|\[[0-9a-f:.]+\])"
    r"(?::(?P<port>\d{1,5}))?/?$"
)
DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}
KINDS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")


@dataclass(frozen=True)
class Origin:
    """One declared origin: `*.` in `host` for a wildcard, `port` None for the default."""

    scheme: str
    host: str
    port: int | None = None

    def text(self) -> str:
        return f"{self.scheme}://{self.host}" + (f":{self.port}" if self.port else "")

    def matches(self, scheme: str, host: str, port: int | None) -> bool:
        if scheme != self.scheme:
            return False
        if (port or DEFAULT_PORTS.get(scheme)) != (self.port or DEFAULT_PORTS.get(self.scheme)):
            return False
        if self.host.startswith("*."):
            return host.endswith(self.host[1:]) and len(host) > len(self.host) - 1
        return host == self.host


@dataclass(frozen=True)
class Csp:
    """A page's declared origins, by what they may be used for."""

    connect: tuple[Origin, ...] = ()
    resource: tuple[Origin, ...] = ()
    frame: tuple[Origin, ...] = ()
    base_uri: tuple[Origin, ...] = ()
    dropped: tuple[str, ...] = ()  # declared entries that are not an origin

    @property
    def origins(self) -> tuple[Origin, ...]:
        return self.connect + self.resource + self.frame


def parse_origin(text: str) -> Origin | None:
    """`text` as an origin, or None (see the module guarantees)."""
    found = _ORIGIN.match(text.strip().lower()) if isinstance(text, str) else None
    if found is None:
        return None
    port = int(found["port"]) if found["port"] else None
    if port is not None and not 0 < port < 65536:
        return None
    return Origin(found["scheme"], found["host"], port)


def parse_csp(declared: Any) -> Csp:
    """A resource's `_meta.ui.csp` as a `Csp` (anything not a mapping declares nothing)."""
    if not isinstance(declared, dict):
        return Csp()
    lists: dict[str, list[Origin]] = {kind: [] for kind in KINDS}
    dropped: list[str] = []
    for kind in KINDS:
        entries = declared.get(kind)
        for entry in entries if isinstance(entries, list) else ():
            origin = parse_origin(entry) if isinstance(entry, str) else None
            if origin is None:
                dropped.append(str(entry)[:200])
            elif origin not in lists[kind]:
                lists[kind].append(origin)
    return Csp(
        connect=tuple(lists["connectDomains"]),
        resource=tuple(lists["resourceDomains"]),
        frame=tuple(lists["frameDomains"]),
        base_uri=tuple(lists["baseUriDomains"]),
        dropped=tuple(dropped),
    )


def _sources(origins: tuple[Origin, ...], *extra: str) -> str:
    words = [*extra, *(o.text() for o in origins)]
    return " ".join(words) if words else "'none'"


def policy(csp: Csp) -> str:
    """The Content-Security-Policy the page is given (see the module guarantees)."""
    resource, inline = csp.resource, "'unsafe-inline'"
    directives = [
        "default-src 'none'",
        f"script-src {_sources(resource, inline)}",
        f"style-src {_sources(resource, inline)}",
        f"img-src {_sources(resource, 'data:', 'blob:')}",
        f"font-src {_sources(resource, 'data:')}",
        f"media-src {_sources(resource, 'data:', 'blob:')}",
        f"connect-src {_sources(csp.connect)}",
        f"frame-src {_sources(csp.frame)}",
        f"base-uri {_sources(csp.base_uri)}",
        "worker-src blob:",
        "object-src 'none'",
        "form-action 'none'",
    ]
    return "; ".join(directives)


def allowed(csp: Csp, url: str) -> bool:
    """Whether a request for `url` may leave the page (see the module guarantees)."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    scheme = parts.scheme.lower()
    return any(o.matches(scheme, host, port) for o in csp.origins)


def with_policy(page: str, csp: Csp) -> str:
    """`page` with its policy as the first thing after its doctype: no markup of the page comes
    before it, so nothing of the page loads or runs outside it (a policy the page sets itself
    can only narrow it further)."""
    meta = f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy(csp))}">'
    found = _DOCTYPE.match(page)
    at = found.end() if found else 0
    return page[:at] + meta + page[at:]


__all__ = ["Csp", "Origin", "allowed", "parse_csp", "parse_origin", "policy", "with_policy"]
