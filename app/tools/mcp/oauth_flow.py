"""The `mcp` SDK's OAuth provider for one server, made to follow the server: the SDK's client
auth (`mcp.client.auth.OAuthClientProvider`, and its client-credentials extensions) does the
discovery, the registration or the Client ID Metadata Document, PKCE, the token exchange, the
refresh and the step-up's scope union; this module decides what the app lets it do.

Guarantees: the first 401 on any request (not only `initialize`) starts a sign-in in a login,
and in a connection — which never opens a browser nor waits on a person — fails that request
at once with "sign in to NAME first" (the tokens dropped: the server refused them), the
connection itself kept; a 403 `insufficient_scope` in a connection fails the request with
`WiderSignIn` and keeps the tokens (`oauth_state.py`), while a login asks for the union of
the scopes granted, the scope challenged and the one wanted (SEP-2350); a provider makes at
most `MAX_ROUNDS` authorizations in a row (a request that succeeds ends the row), then stops
with a sentence; every failure of the flow is
kept as `problem` for the connection to say, whatever the transport makes of it. A client is who the
configuration says (`oauth_client.py`): a pre-registered client is used as given and a
registration is never attempted for it; an authorization server whose metadata offers no
registration is never sent one (the sentence says to give a client id); a metadata URL is
handed to the SDK, which uses it where the server supports it; `client_credentials` uses the
SDK's `ClientCredentialsOAuthProvider` or `PrivateKeyJWTOAuthProvider`, pinned to the
configured issuer, and needs no person in a connection either; `private_key_jwt` in the
authorization-code grant signs a short-lived assertion (RFC 7523, audience: the issuer) with
the key from the keyring for each token request. Every endpoint is checked before use
(`endpoints.guard`), and a token is refreshed ahead of its expiry.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, fields
from typing import Any

import httpx2
from mcp.client.auth import (
    OAuthClientProvider,
    OAuthFlowError,
    OAuthRegistrationError,
    OAuthTokenError,
)
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.oauth2 import OAuthContext
from mcp.client.auth.utils import (
    extract_field_from_www_auth,
    extract_scope_from_www_auth,
    get_client_metadata_scopes,
    union_scopes,
)
from mcp.shared.auth import OAuthClientMetadata
from pydantic import AnyUrl

from app.domain.redact import redact
from app.tools.mcp.config import McpServer
from app.tools.mcp.endpoints import guard
from app.tools.mcp.oauth_client import PRIVATE_KEY, SECRET, OAuthClient, signing_algorithm
from app.tools.mcp.oauth_state import KeyringStorage, needs_sign_in, shown
from app.tools.mcp.redirect import SignInError
from app.tools.mcp.words import said

MAX_ROUNDS = 3  # authorizations one login may make: a first one and a step-up or two
AHEAD_S = 60.0  # a token is refreshed this long before it expires (at most half its lifetime)
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ASSERTION_S = 300  # an assertion's lifetime


@dataclass
class Following:
    """What one provider knows of its server and of what happened (see the guarantees)."""

    name: str
    server: McpServer
    storage: KeyringStorage
    interactive: bool  # a login (a browser, a person) or a connection
    wanted: str | None = None  # the wider scope a login asks for
    rounds: int = 0
    problem: SignInError | None = None  # the last failure of the flow, for the connection

    @property
    def client(self) -> OAuthClient:
        return self.server.oauth_client or OAuthClient()

    def fail(self, error: SignInError) -> SignInError:
        self.problem = error
        return error

    def take(self) -> SignInError | None:
        """What stopped the last request (asked once: then forgotten)."""
        found, self.problem = self.problem, None
        return found


def no_registration(name: str) -> SignInError:
    return SignInError(
        f"Signing in to {name} needs a client id: its authorization server offers no"
        " registration (and takes no client metadata document from the app); add the server"
        f" again with the client id its owner issued (`harmony-desk mcp add {name} --url URL"
        " --oauth --client-id ID …`) or give it on the MCP page"
    )


def not_its_issuer(name: str) -> SignInError:
    return SignInError(
        f"Signing in to {name} was stopped: the server sends the sign-in to another"
        " authorization server than the one its client id belongs to; the client's"
        " credentials go to that one only"
    )


def too_many(name: str, scope: str | None) -> SignInError:
    asked = f" (scopes: {shown(scope)})" if scope else ""
    return SignInError(
        f"Signing in to {name} was stopped after {MAX_ROUNDS} authorizations in a row: the"
        f" server kept asking for another{asked}"
    )


def why_not(exc: OAuthFlowError) -> str:
    """What the SDK's OAuth error means, in words."""
    if isinstance(exc, OAuthRegistrationError):
        return "its authorization server would not register Harmony Desk"
    if isinstance(exc, OAuthTokenError):
        return "its authorization server gave no token"
    return "its authorization server did not finish the sign-in"


def _valid_until(expires_in: int | str | None) -> float | None:
    """When a token is to be refreshed: ahead of its expiry (see the module guarantees)."""
    if expires_in is None:
        return None
    lifetime = float(expires_in)
    return time.time() + lifetime - min(AHEAD_S, lifetime / 2)


def _signer(follow: Following) -> Callable[[str], str]:
    """A private_key_jwt assertion for the audience (RFC 7523 §3), signed with the key."""
    import jwt

    client, pem = follow.client, follow.storage.secret(PRIVATE_KEY)
    if pem is None or client.client_id is None:
        raise follow.fail(missing(follow.name, "private key"))
    algorithm = signing_algorithm(pem)

    def sign(audience: str) -> str:
        now = int(time.time())
        who = client.client_id
        claims = {"iss": who, "sub": who, "aud": audience, "iat": now, "exp": now + ASSERTION_S}
        claims["jti"] = str(uuid.uuid4())
        return str(jwt.encode(claims, pem, algorithm=algorithm))

    return sign


def missing(name: str, what: str) -> SignInError:
    option = "--private-key FILE" if what == "private key" else "--client-secret-stdin"
    return SignInError(
        f"the {what} of {name}'s OAuth client is not in the keyring: add the server again"
        f" with {option} or give it on the MCP page"
    )


class _Follows:
    """Mixed in before the SDK's provider class (see the module guarantees)."""

    follow: Following
    context: Any

    async def _initialize(self) -> None:
        await super()._initialize()  # type: ignore[misc]
        self.follow.storage.restore(self.context)

    async def _perform_authorization(self) -> Any:
        follow, metadata = self.follow, self.context.client_metadata
        follow.rounds += 1
        scope = union_scopes(union_scopes(metadata.scope, follow.client.scope), follow.wanted)
        if follow.rounds > MAX_ROUNDS:
            raise follow.fail(too_many(follow.name, scope))
        metadata.scope = scope
        return await super()._perform_authorization()  # type: ignore[misc]

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)  # type: ignore[misc]
        try:
            outgoing = await flow.__anext__()
            while True:
                self._before(outgoing)
                response = yield outgoing
                if outgoing is request and response.status_code < 400:
                    self.follow.rounds = 0  # the bound is on authorizations in a row
                elif outgoing is request and self._stops(response):
                    return  # the refusal goes back to the transport: this request fails
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except OAuthFlowError as exc:  # said as the sign-in's failure, then left to go on up
            follow = self.follow
            text = f"Signing in to {follow.name} failed: {why_not(exc)}."
            follow.fail(SignInError(text, details=redact(said(exc))))
            raise
        finally:
            await flow.aclose()

    def _registration(self, outgoing: httpx2.Request) -> bool:
        metadata = self.context.oauth_metadata
        if metadata is not None and metadata.registration_endpoint is not None:
            where = str(metadata.registration_endpoint)
        else:
            base = self.context.get_authorization_base_url(self.context.server_url)
            where = base + "/register"
        return outgoing.method == "POST" and outgoing.url == httpx2.URL(where)

    def _before(self, outgoing: httpx2.Request) -> None:
        """A registration the app does not make is stopped before it is sent."""
        if not self._registration(outgoing):
            return
        follow, metadata = self.follow, self.context.oauth_metadata
        if follow.client.client_id is not None:
            raise follow.fail(not_its_issuer(follow.name))
        if metadata is not None and metadata.registration_endpoint is None:
            raise follow.fail(no_registration(follow.name))
        if not follow.interactive:
            raise follow.fail(needs_sign_in(follow.name, follow.storage.refused()))

    def _stops(self, response: httpx2.Response) -> bool:
        """In a connection that needs a person, a 401 or a step-up ends the flow: the
        request fails (the transport lives on) and `problem` says why."""
        follow = self.follow
        if follow.interactive or follow.client.grant == "client_credentials":
            return False
        if response.status_code == 401:
            follow.fail(needs_sign_in(follow.name, follow.storage.refused()))
            return True
        error = extract_field_from_www_auth(response, "error")
        if response.status_code != 403 or error != "insufficient_scope":
            return False
        context = self.context
        challenged = get_client_metadata_scopes(
            extract_scope_from_www_auth(response),
            context.protected_resource_metadata,
            context.oauth_metadata,
        )
        granted = context.current_tokens.scope if context.current_tokens else None
        scope = union_scopes(union_scopes(granted, follow.client.scope), challenged)
        follow.fail(follow.storage.want(scope or ""))
        return True


def _context(follow: Following, old: OAuthContext) -> OAuthContext:
    """The provider's context, checking endpoints, refreshing early, signing assertions."""
    sign = _signer(follow) if follow.client.token_auth == "private_key_jwt" else None

    class Context(OAuthContext):
        def update_token_expiry(self, token: Any) -> None:
            self.token_expiry_time = _valid_until(token.expires_in)

        def __setattr__(self, key: str, value: Any) -> None:
            guard(follow.name, key, value)  # an endpoint is checked before it is used
            super().__setattr__(key, value)

        def prepare_token_auth(
            self, data: dict[str, str], headers: dict[str, str] | None = None
        ) -> tuple[dict[str, str], dict[str, str]]:
            data, headers = super().prepare_token_auth(data, headers)
            if sign is not None and self.oauth_metadata is not None:
                data["client_assertion"] = sign(str(self.oauth_metadata.issuer))
                data["client_assertion_type"] = ASSERTION_TYPE
            return data, headers

    return Context(**{f.name: getattr(old, f.name) for f in fields(old)})


def _machine(follow: Following) -> tuple[type, dict[str, Any]]:
    """The SDK's client-credentials provider and its arguments."""
    client, storage = follow.client, follow.storage
    common = {
        "server_url": str(follow.server.url),
        "storage": storage,
        "client_id": client.client_id,
        "scope": client.scope,
        "issuer": client.issuer,
    }
    if client.token_auth == "private_key_jwt":
        pem = storage.secret(PRIVATE_KEY)
        if pem is None:
            raise follow.fail(missing(follow.name, "private key"))
        who = str(client.client_id)
        signed = SignedJWTParameters(
            issuer=who, subject=who, signing_key=pem, signing_algorithm=signing_algorithm(pem)
        )
        return PrivateKeyJWTOAuthProvider, {
            **common,
            "assertion_provider": signed.create_assertion_provider(),
        }
    secret = storage.secret(SECRET)
    if secret is None:
        raise follow.fail(missing(follow.name, "client secret"))
    return ClientCredentialsOAuthProvider, {
        **common,
        "client_secret": secret,
        "token_endpoint_auth_method": client.method,
    }


def _person(
    follow: Following,
    redirect_uri: str,
    redirect: Callable[[str], Awaitable[None]],
    callback: Callable[[], Awaitable[Any]],
) -> tuple[type, dict[str, Any]]:
    """The SDK's authorization-code provider and its arguments."""
    client = follow.client
    metadata = OAuthClientMetadata(
        redirect_uris=[AnyUrl(redirect_uri)],
        client_name="Harmony Desk",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method=client.method if client.client_id else "none",
        scope=client.scope,
    )
    return OAuthClientProvider, {
        "server_url": str(follow.server.url),
        "client_metadata": metadata,
        "storage": follow.storage,
        "redirect_handler": redirect,
        "callback_handler": callback,
        "client_metadata_url": client.metadata_url,
    }


_CLASSES: dict[type, type] = {}


def provider(
    follow: Following,
    redirect_uri: str,
    redirect: Callable[[str], Awaitable[None]],
    callback: Callable[[], Awaitable[Any]],
) -> Any:
    """The SDK's provider for `follow.server`, following it (see the module guarantees)."""
    if follow.client.grant == "client_credentials":
        base, arguments = _machine(follow)
    else:
        base, arguments = _person(follow, redirect_uri, redirect, callback)
    made = _CLASSES.setdefault(base, type(f"Following{base.__name__}", (_Follows, base), {}))
    auth = made(**arguments)
    auth.follow = follow
    auth.context = follow.storage.context = _context(follow, auth.context)
    return auth


__all__ = [
    "MAX_ROUNDS",
    "Following",
    "missing",
    "no_registration",
    "not_its_issuer",
    "provider",
    "too_many",
    "why_not",
]
