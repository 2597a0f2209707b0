"""Where an OAuth sign-in may send the person's browser and the app's codes and tokens: the
endpoints an MCP server's metadata names, checked before any of them is used.

Guarantees: every address the metadata names — the authorization servers a protected
resource lists and its `jwks_uri`; an authorization server's issuer and its authorization,
token, registration, revocation and introspection endpoints (and its `jwks_uri` where the
metadata keeps one) — is https, or http to this computer (`app.domain.links.loopback`); the
token endpoint is on the issuer's origin (scheme, host and port), since the authorization code
and the refresh token go there; the authorization URL the browser is sent to is https (or
loopback http) too, also where no metadata named it. Anything else stops the sign-in (or the
connection that would refresh a token) with a `SignInError` whose sentence names the server,
the endpoint and, for another origin, both origins — nothing is sent and no browser opens.
This host refuses rather than asks: a person cannot judge an authorization server's layout,
and a legitimate one keeps its token endpoint on its own origin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from app.domain.inert import inert
from app.domain.links import loopback
from app.tools.mcp.redirect import SignInError

_SHOWN = 200  # characters of an address in a sentence
_NAMED = {
    "issuer": "issuer",
    "authorization_endpoint": "authorization endpoint",
    "token_endpoint": "token endpoint",
    "registration_endpoint": "registration endpoint",
    "revocation_endpoint": "revocation endpoint",
    "introspection_endpoint": "introspection endpoint",
    "jwks_uri": "key set (jwks_uri)",
}


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), port or {"https": 443, "http": 80}.get(scheme)


def _shown_origin(url: str) -> str:
    scheme, host, port = _origin(url)
    return inert(f"{scheme}://{host}" + (f":{port}" if port not in (80, 443) else ""), _SHOWN)


def web_safe(url: str) -> bool:
    """Whether `url` is https, or http to this computer."""
    scheme, host, port = _origin(url)
    if port == -1 or not host:
        return False
    return scheme == "https" or (scheme == "http" and loopback(host))


def _stopped(name: str, what: str, url: str) -> SignInError:
    return SignInError(
        f"Signing in to {name} was stopped: its {what} is {inert(url, _SHOWN)}, which is not"
        " https; a sign-in uses only https (or http to this computer)."
    )


def check_authorization_url(name: str, url: str) -> None:
    """The address the browser is sent to (see the module guarantees)."""
    if not web_safe(url):
        raise _stopped(name, "authorization endpoint", url)


def check_resource(name: str, metadata: Any) -> None:
    """A protected resource's metadata: its authorization servers and key set."""
    for server in getattr(metadata, "authorization_servers", None) or ():
        if not web_safe(str(server)):
            raise _stopped(name, "authorization server", str(server))
    jwks = getattr(metadata, "jwks_uri", None)
    if jwks is not None and not web_safe(str(jwks)):
        raise _stopped(name, _NAMED["jwks_uri"], str(jwks))


def check_auth_server(name: str, url: str) -> None:
    """The authorization server the resource named (before its metadata is fetched)."""
    if not web_safe(url):
        raise _stopped(name, "authorization server", url)


def check_metadata(name: str, metadata: Any) -> None:
    """An authorization server's metadata (see the module guarantees)."""
    extra = getattr(metadata, "model_extra", None) or {}
    for field, what in _NAMED.items():
        url = getattr(metadata, field, None) or extra.get(field)
        if url is not None and not web_safe(str(url)):
            raise _stopped(name, what, str(url))
    issuer, token = str(metadata.issuer), str(metadata.token_endpoint)
    if _origin(issuer) != _origin(token):
        raise SignInError(
            f"Signing in to {name} was stopped: its authorization server {_shown_origin(issuer)}"
            f" names a token endpoint on another site, {_shown_origin(token)}; the sign-in's"
            " code and tokens go only to the server that issues them."
        )


GUARDED: dict[str, Callable[[str, Any], None]] = {
    "auth_server_url": check_auth_server,
    "oauth_metadata": check_metadata,
    "protected_resource_metadata": check_resource,
}


def guard(name: str, key: str, value: Any) -> None:
    """Check `value` as the SDK's OAuth context is given it under `key` (a `SignInError` for
    an endpoint this host does not use; see the module guarantees); other keys pass."""
    check = GUARDED.get(key)
    if check is not None and value is not None:
        check(name, value)


__all__ = [
    "check_auth_server",
    "check_authorization_url",
    "check_metadata",
    "check_resource",
    "guard",
    "web_safe",
]
