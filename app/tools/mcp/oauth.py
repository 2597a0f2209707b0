"""Signing in to a remote MCP server with OAuth 2.1, through the official `mcp` SDK's client
auth (`mcp.client.auth.OAuthClientProvider`): it finds the authorization server from the
resource's protected-resource metadata, registers the client dynamically, runs the
authorization-code grant with PKCE (S256) and refreshes the token.

Guarantees: a server's access and refresh tokens and its client registration are kept in the OS
keyring only (`mcp.NAME.oauth-tokens`, `mcp.NAME.oauth-client`, `app/secrets.py`), never in a
file, and every token read or stored is redacted from all the app writes; a token is refreshed
before it expires (a minute ahead, or halfway through a shorter lifetime), in a later run too:
its expiry and the authorization server's metadata are kept beside it. `login` is the one place
a browser opens: it waits on a loopback redirect (`http://127.0.0.1:PORT/callback`, only the
callback carrying the state it sent, under a deadline) and says to which scopes it signed in.
Every endpoint the servers' metadata names is checked before it is used (`endpoints.py`:
https or loopback http only, the token endpoint on the issuer's origin). `connect_auth`, which
every connection uses, never opens a browser nor waits on a person: without stored tokens, or
when the server refuses them and they cannot be refreshed, the connection fails at once with
the `SignInError` "sign in to NAME first: …" (the connection's `McpError` says it), and the
server's `sign_in` state says "not signed in" or "sign-in expired". `logout` forgets the tokens
and the client registration. Every failure of a sign-in is a `SignInError` in words.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import webbrowser
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from app.domain.redact import redact, remember
from app.secrets import Secrets
from app.tools.mcp.config import OAUTH_ENTRIES, McpServer, secret_name
from app.tools.mcp.endpoints import check_authorization_url, guard
from app.tools.mcp.redirect import REQUEST_S, Receiver, SignInError
from app.tools.mcp.words import leaf, said, why

TOKENS, CLIENT = OAUTH_ENTRIES
LOGIN_S = 300.0  # how long a sign-in waits for the browser
AHEAD_S = 60.0  # a token is refreshed this long before it expires (at most half its lifetime)
NO_PORT = "http://127.0.0.1/callback"  # a connection's redirect URI: never used, no browser
Opener = Callable[[str], object]
# A sign-in the SDK could not finish is said by the SignInError raised, not by a traceback that
# Python's last-resort handler would print to the terminal.
logging.getLogger("mcp.client.auth").addHandler(logging.NullHandler())


class SignInState(StrEnum):
    SIGNED_IN = "signed in"
    NOT_SIGNED_IN = "not signed in"
    EXPIRED = "sign-in expired"


@dataclass(frozen=True)
class SignIn:
    """A server's sign-in, as the MCP page and `mcp list` say it."""

    state: SignInState
    scopes: str = ""  # what the tokens were granted ("" when the server did not say)
    issuer: str = ""  # the authorization server's host

    def sentence(self, name: str) -> str:
        if self.state is SignInState.EXPIRED:
            return f"The sign-in to {name} has expired: sign in again."
        if self.state is SignInState.NOT_SIGNED_IN:
            return f"Not signed in to {name}."
        extra = [f"scopes: {self.scopes}"] if self.scopes else []
        extra += [f"at {self.issuer}"] if self.issuer else []
        return f"Signed in to {name}" + (f" ({'; '.join(extra)})" if extra else "") + "."


def needs_sign_in(name: str, expired: bool) -> SignInError:
    why = "Its sign-in expired or the server refused it" if expired else "It has no sign-in"
    return SignInError(
        f"sign in to {name} first: `harmony-desk mcp login {name}` or the MCP page's Sign in",
        details=f"{why}; a connection never opens the browser by itself.",
    )


class KeyringStorage:
    """The SDK's `TokenStorage`, over the keyring (see the module guarantees). A login
    (`interactive`) starts from no tokens and may register the client; a connection has the
    stored tokens only, and a registration there means a sign-in is needed."""

    def __init__(self, name: str, secrets: Secrets, interactive: bool = False) -> None:
        self.name, self.secrets, self.interactive = name, secrets, interactive
        self.context: Any = None  # the provider's OAuthContext: its expiry and metadata
        self.stored = False  # whether tokens were stored through this storage

    def _read(self, entry: str) -> dict[str, Any]:
        text = self.secrets.get(secret_name(self.name, entry))
        with contextlib.suppress(ValueError):
            data = json.loads(text or "{}")
            return data if isinstance(data, dict) else {}
        return {}

    def _write(self, entry: str, data: dict[str, Any]) -> None:
        self.secrets.set(secret_name(self.name, entry), json.dumps(data))

    def record(self) -> dict[str, Any]:
        """The stored tokens, their expiry and the servers' metadata ({} when none)."""
        return self._read(TOKENS)

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken
        from pydantic import ValidationError

        tokens = None if self.interactive else self.record().get("tokens")
        try:
            token = OAuthToken.model_validate(tokens) if isinstance(tokens, dict) else None
        except ValidationError:
            return None
        if token is not None:
            remember(token.access_token)
            remember(token.refresh_token)
        return token

    async def set_tokens(self, tokens: Any) -> None:
        remember(tokens.access_token)
        remember(tokens.refresh_token)
        self.stored = True
        context = self.context
        self._write(
            TOKENS,
            {
                "tokens": tokens.model_dump(mode="json", exclude_none=True),
                "valid_until": context.token_expiry_time,
                "auth_server_url": context.auth_server_url,
                "authorization": _dumped(context.oauth_metadata),
                "resource": _dumped(context.protected_resource_metadata),
            },
        )

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull
        from pydantic import ValidationError

        try:
            info = OAuthClientInformationFull.model_validate(self._read(CLIENT))
        except ValidationError:
            return None
        remember(info.client_secret)
        return info

    async def set_client_info(self, client_info: Any) -> None:
        if not self.interactive:
            raise needs_sign_in(self.name, self.refused())
        remember(client_info.client_secret)
        self._write(CLIENT, client_info.model_dump(mode="json", exclude_none=True))

    def registered_uris(self) -> list[str]:
        return [str(u) for u in self._read(CLIENT).get("redirect_uris") or ()]

    def restore(self, context: Any) -> None:
        """After the SDK loaded the tokens: when they are to be refreshed, and where."""
        from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

        record = self.record()
        if self.interactive or not record.get("tokens"):
            return
        valid = record.get("valid_until")
        context.token_expiry_time = float(valid) if isinstance(valid, int | float) else None
        context.auth_server_url = record.get("auth_server_url")
        with contextlib.suppress(ValueError):  # pydantic's ValidationError is one
            if record.get("authorization"):
                context.oauth_metadata = OAuthMetadata.model_validate(record["authorization"])
            if record.get("resource"):
                metadata = ProtectedResourceMetadata.model_validate(record["resource"])
                context.protected_resource_metadata = metadata

    def refused(self) -> bool:
        """The server will not take the stored tokens: they go, and the state says expired;
        whether there was a sign-in to expire."""
        record = self.record()
        if record:
            self._write(TOKENS, {"refused": True})
        return bool(record)

    def forget(self, entries: tuple[str, ...] = OAUTH_ENTRIES) -> bool:
        return any([self.secrets.delete(secret_name(self.name, e)) for e in entries])


def _dumped(model: Any) -> Any:
    return None if model is None else model.model_dump(mode="json", exclude_none=True)


def _valid_until(expires_in: int | str | None) -> float | None:
    """When a token is to be refreshed: ahead of its expiry (see the module guarantees)."""
    if expires_in is None:
        return None
    lifetime = float(expires_in)
    return time.time() + lifetime - min(AHEAD_S, lifetime / 2)


def _provider(
    server: McpServer,
    storage: KeyringStorage,
    redirect_uri: str,
    redirect: Callable[[str], Awaitable[None]],
    callback: Callable[[], Awaitable[Any]],
) -> Any:
    """The SDK's provider for `server`: a public client (PKCE, no secret), its expiry early."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.auth.oauth2 import OAuthContext
    from mcp.shared.auth import OAuthClientMetadata
    from pydantic import AnyUrl

    class Context(OAuthContext):
        def update_token_expiry(self, token: Any) -> None:
            self.token_expiry_time = _valid_until(token.expires_in)

        def __setattr__(self, key: str, value: Any) -> None:
            guard(storage.name, key, value)  # an endpoint is checked before it is used
            super().__setattr__(key, value)

    class Provider(OAuthClientProvider):
        async def _initialize(self) -> None:
            await super()._initialize()
            storage.restore(self.context)

    metadata = OAuthClientMetadata(
        redirect_uris=[AnyUrl(redirect_uri)],
        client_name="Harmony Desk",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    provider = Provider(str(server.url), metadata, storage, redirect, callback)
    old = provider.context
    provider.context = storage.context = Context(
        **{f.name: getattr(old, f.name) for f in fields(old)}
    )
    return provider


def connect_auth(name: str, server: McpServer, secrets: Secrets) -> Any:
    """The `httpx.Auth` of a connection to `name` (see the module guarantees: no browser)."""
    storage = KeyringStorage(name, secrets)
    record = storage.record()
    if not record.get("tokens"):
        raise needs_sign_in(name, expired=bool(record))

    async def no_browser(_url: str) -> None:
        raise needs_sign_in(name, storage.refused())

    async def no_callback() -> Any:
        raise needs_sign_in(name, True)

    uris = storage.registered_uris()
    return _provider(server, storage, uris[0] if uris else NO_PORT, no_browser, no_callback)


async def sign_in_error(_kind: Any, exc: BaseException | None, _trace: Any) -> bool:
    """An exit callback for a connection's stack: a `SignInError` raised inside the transport's
    task group comes out as itself, not inside the group (nothing else is changed)."""
    inner = leaf(exc) if exc is not None else None
    if inner is not exc and isinstance(inner, SignInError):
        raise inner from None
    return False


def sign_in(name: str, secrets: Secrets) -> SignIn:
    """The stored sign-in of `name` (blocking: the keyring)."""
    record = KeyringStorage(name, secrets).record()
    tokens = record.get("tokens")
    if not isinstance(tokens, dict):
        return SignIn(SignInState.EXPIRED if record else SignInState.NOT_SIGNED_IN)
    valid = record.get("valid_until")
    if not tokens.get("refresh_token") and isinstance(valid, int | float) and valid < time.time():
        return SignIn(SignInState.EXPIRED)
    issuer = urlsplit(str(record.get("auth_server_url") or "")).netloc
    return SignIn(SignInState.SIGNED_IN, str(tokens.get("scope") or ""), issuer)


def logout(name: str, secrets: Secrets) -> bool:
    """Forget the tokens and the client registration of `name`; whether there were any."""
    return KeyringStorage(name, secrets).forget()


def _headers(name: str, server: McpServer, secrets: Secrets) -> dict[str, str]:
    stored = {k: secrets.get(secret_name(name, k)) for k in server.secret_headers}
    return {**server.headers, **{k: v for k, v in stored.items() if v}}


async def _initialize(name: str, server: McpServer, secrets: Secrets, auth: Any) -> None:
    """Open a session to the server through `auth` (which signs in on the server's 401)."""
    from mcp import ClientSession
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    url, headers = str(server.url), _headers(name, server, secrets)
    async with contextlib.AsyncExitStack() as stack:
        if server.transport == "sse":
            streams = await stack.enter_async_context(sse_client(url, headers, auth=auth))
        else:
            client = await stack.enter_async_context(create_mcp_http_client(headers, auth=auth))
            streams = await stack.enter_async_context(
                streamable_http_client(url, http_client=client)
            )
        session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
        await session.initialize()


async def _login(
    name: str,
    server: McpServer,
    secrets: Secrets,
    opener: Opener,
    timeout: float,
    told: Callable[[str], None],
) -> bool:
    """Whether the server asked for a sign-in (and tokens were stored)."""
    storage = KeyringStorage(name, secrets, interactive=True)
    registered = storage.registered_uris()
    receiver = Receiver(name)
    await receiver.start((urlsplit(registered[0]).port or 0) if registered else 0)
    try:
        if receiver.redirect_uri not in registered:  # registered for another port: again
            storage.forget((CLIENT,))

        async def redirect(url: str) -> None:
            check_authorization_url(name, url)
            receiver.expect(url)  # only the callback with this URL's state is taken
            told(url)
            await asyncio.to_thread(opener, url)

        auth = _provider(
            server, storage, receiver.redirect_uri, redirect, lambda: receiver.code(timeout)
        )
        await _initialize(name, server, secrets, auth)
    finally:
        await receiver.close()
    return storage.stored


def login(
    name: str,
    server: McpServer,
    secrets: Secrets,
    opener: Opener | None = None,
    timeout: float = LOGIN_S,
    told: Callable[[str], None] = lambda _url: None,
) -> SignIn:
    """Sign in to `name` in the browser (`opener`, default `webbrowser.open`; `told` hears the
    authorization URL first); blocking: it runs its own event loop (see the module guarantees)."""
    if not server.oauth:
        raise SignInError(f"{name} does not sign in with OAuth: add it again with --oauth")
    work = _login(name, server, secrets, opener or webbrowser.open, timeout, told)
    try:
        asked = asyncio.run(asyncio.wait_for(work, timeout + 2 * REQUEST_S + 30))
    except Exception as exc:  # the SDK's task groups, its OAuth errors, the network
        inner = leaf(exc)
        if isinstance(inner, SignInError):
            raise inner from None
        raise SignInError(
            f"Signing in to {name} failed: {_why(inner, server)}.", details=redact(said(inner))
        ) from None
    if not asked:
        raise SignInError(f"{name} did not ask for a sign-in: it works without OAuth.")
    return sign_in(name, secrets)


def _why(exc: BaseException, server: McpServer) -> str:
    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError

    if isinstance(exc, OAuthRegistrationError):
        return "its authorization server would not register Harmony Desk"
    if isinstance(exc, OAuthTokenError):
        return "its authorization server gave no token"
    if isinstance(exc, OAuthFlowError):
        return "its authorization server did not finish the sign-in"
    return why(exc, str(server.url))


__all__ = [
    "KeyringStorage",
    "SignIn",
    "SignInError",
    "SignInState",
    "connect_auth",
    "login",
    "logout",
    "needs_sign_in",
    "sign_in",
    "sign_in_error",
]
