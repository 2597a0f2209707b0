"""Signing in to a remote MCP server with OAuth 2.1, through the official `mcp` SDK's client
auth (`oauth_flow.py` makes its provider follow the server): it finds the authorization server
from the resource's protected-resource metadata, identifies the app as its configuration says
(`oauth_client.py`: dynamic registration, a Client ID Metadata Document, a pre-registered client
with its secret or private key, or client credentials), runs the authorization-code grant with
PKCE (S256) and refreshes the token.

Guarantees: a server's tokens and its client registration are kept in the OS keyring only
(`oauth_state.py`), never in a file, every token redacted from all the app writes; a token is
refreshed before it expires, in a later run too. `login` is the one place a browser opens: it
waits on a loopback redirect (`http://127.0.0.1:PORT/callback`, only the callback carrying the
state it sent, under a deadline), makes the requests a server may protect — `initialize`, then
`tools/list`, `resources/list` and `prompts/list` where offered — so that the first 401 on any
of them, or a 403 asking for a wider scope, is the sign-in it makes (never "it works without
OAuth" for a server that protects a method), asks for the wider scope a connection was refused
for (`SignInState.WIDER`), keeps the earlier tokens until the new ones arrive, makes at most
`MAX_ROUNDS` authorizations in a row, and says to which scopes it signed in; a
client-credentials server signs in with no browser and no person. Every endpoint the
servers' metadata names is checked before it is used (`endpoints.py`). `connect_auth`, which
every connection uses, never opens a browser nor waits on a person: the first 401 on any
request fails it with the `SignInError` "sign in to NAME first: …" and the state says "not
signed in" or "sign-in expired"; a 403 `insufficient_scope` fails it with `WiderSignIn` and
the tokens stay; the provider's `follow.take()` gives the connection that sentence. `logout`
forgets the tokens and the client registration (not a pre-registered client's secret: that is
configuration). Every failure of a sign-in is a `SignInError` in words.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import webbrowser
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from app.domain.redact import redact
from app.secrets import Secrets
from app.tools.mcp.config import McpServer, secret_name
from app.tools.mcp.endpoints import check_authorization_url
from app.tools.mcp.oauth_state import (
    CLIENT,
    KeyringStorage,
    SignIn,
    SignInState,
    WiderSignIn,
    needs_sign_in,
    sign_in,
)
from app.tools.mcp.redirect import REQUEST_S, Receiver, SignInError
from app.tools.mcp.words import leaf, said, why

LOGIN_S = 300.0  # how long a sign-in waits for the browser
NO_PORT = "http://127.0.0.1/callback"  # a connection's redirect URI: never used, no browser
Opener = Callable[[str], object]
# A sign-in the SDK could not finish is said by the SignInError raised, not by a traceback that
# Python's last-resort handler would print to the terminal.
logging.getLogger("mcp.client.auth").addHandler(logging.NullHandler())


def connect_auth(name: str, server: McpServer, secrets: Secrets) -> Any:
    """The `httpx.Auth` of a connection to `name` (see the module guarantees: no browser)."""
    from app.tools.mcp.oauth_flow import Following, provider

    storage = KeyringStorage(name, secrets, server=server)
    follow = Following(name, server, storage, interactive=False)

    async def no_browser(_url: str) -> None:
        raise follow.fail(needs_sign_in(name, storage.refused()))

    async def no_callback() -> Any:
        raise follow.fail(needs_sign_in(name, True))

    uris = storage.registered_uris()
    return provider(follow, uris[0] if uris else NO_PORT, no_browser, no_callback)


async def sign_in_error(_kind: Any, exc: BaseException | None, _trace: Any) -> bool:
    """An exit callback for a connection's stack: a `SignInError` raised inside the transport's
    task group comes out as itself, not inside the group (nothing else is changed)."""
    inner = leaf(exc) if exc is not None else None
    if inner is not exc and isinstance(inner, SignInError):
        raise inner from None
    return False


def logout(name: str, secrets: Secrets) -> bool:
    """Forget the tokens and the client registration of `name`; whether there were any."""
    return KeyringStorage(name, secrets).forget()


def _headers(name: str, server: McpServer, secrets: Secrets) -> dict[str, str]:
    stored = {k: secrets.get(secret_name(name, k)) for k in server.secret_headers}
    return {**server.headers, **{k: v for k, v in stored.items() if v}}


async def _probe(name: str, server: McpServer, secrets: Secrets, auth: Any) -> None:
    """Open a session through `auth` and make the requests a server may protect (see the
    module guarantees); a JSON-RPC error from one of the lists is the server's, not a
    sign-in's, and is left to a connection to say."""
    from mcp import ClientSession
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.exceptions import MCPError

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
        offers = (await session.initialize()).capabilities
        for what, ask in (
            (offers.tools, session.list_tools),
            (offers.resources, session.list_resources),
            (offers.prompts, session.list_prompts),
        ):
            if what is not None:
                with contextlib.suppress(MCPError):
                    await ask()


async def _nobody(*_args: Any) -> Any:
    raise SignInError("a client-credentials sign-in has no browser step")


async def _login(
    name: str,
    server: McpServer,
    secrets: Secrets,
    opener: Opener,
    timeout: float,
    told: Callable[[str], None],
    wanted: str | None,
) -> bool:
    """Whether the server asked for a sign-in (and tokens were stored)."""
    from app.tools.mcp.oauth_flow import Following, provider

    storage = KeyringStorage(name, secrets, interactive=True, server=server)
    storage.wanted = wanted
    follow = Following(name, server, storage, interactive=True, wanted=wanted)
    if follow.client.grant == "client_credentials":  # no person, no browser
        await _probe(name, server, secrets, provider(follow, NO_PORT, _nobody, _nobody))
        return storage.stored
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

        auth = provider(follow, receiver.redirect_uri, redirect, lambda: receiver.code(timeout))
        await _probe(name, server, secrets, auth)
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
    scope: str | None = None,
) -> SignIn:
    """Sign in to `name` in the browser (`opener`, default `webbrowser.open`; `told` hears the
    authorization URL first), asking for `scope` too (None: the wider scope a connection was
    refused for, if any); blocking: it runs its own event loop (see the module guarantees)."""
    if not server.oauth:
        raise SignInError(f"{name} does not sign in with OAuth: add it again with --oauth")
    wanted = scope or str(KeyringStorage(name, secrets).record().get("wanted") or "") or None
    work = _login(name, server, secrets, opener or webbrowser.open, timeout, told, wanted)
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
        raise SignInError(
            f"{name} did not ask for a sign-in: it answered initialize and its lists without"
            " one, so it works without OAuth."
        )
    return sign_in(name, secrets)


def _why(exc: BaseException, server: McpServer) -> str:
    from mcp.client.auth import OAuthFlowError

    from app.tools.mcp.oauth_flow import why_not

    return why_not(exc) if isinstance(exc, OAuthFlowError) else why(exc, str(server.url))


__all__ = [
    "KeyringStorage",
    "SignIn",
    "SignInError",
    "SignInState",
    "WiderSignIn",
    "connect_auth",
    "login",
    "logout",
    "needs_sign_in",
    "sign_in",
    "sign_in_error",
]
