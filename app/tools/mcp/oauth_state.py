"""A remote MCP server's sign-in as the keyring keeps it, and the sentences that say what it
needs: the SDK's `TokenStorage` over the keyring, the sign-in state the MCP page and `mcp list`
show, and the errors of a sign-in that is needed, wider, or stopped.

Guarantees: tokens, their expiry, the servers' metadata and a dynamic registration are kept in
the keyring only (`mcp.NAME.oauth-tokens`, `mcp.NAME.oauth-client`), each token `remember`ed so
that it is redacted from all the app writes; a pre-registered client (`oauth_client.py`) is
read from the configuration and its secret from the keyring, and is never replaced by a
registration; a server that refuses the tokens (401) has them dropped and its state says
"sign-in expired"; a server that asks for a wider scope (403 `insufficient_scope`) keeps them —
the scope it asked for is recorded beside them (shown inert and cut short wherever it is
said), the state says "wider sign-in asked", and they are replaced only when the tokens of a
sign-in for that scope arrive; the number of sign-ins made for one wider scope is kept, so the
host stops asking after `MAX_STEP_UPS` with a sentence (`stopped`).
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from app.domain.inert import inert
from app.domain.redact import remember
from app.secrets import Secrets
from app.tools.mcp.config import OAUTH_ENTRIES, McpServer, secret_name
from app.tools.mcp.redirect import SignInError

TOKENS, CLIENT = OAUTH_ENTRIES
MAX_STEP_UPS = 3  # sign-ins for one wider scope before the host stops asking for it
SCOPE_CHARS = 300  # of a scope a server chose, in a sentence


def shown(scope: str) -> str:
    """A scope a server chose, as it may be shown: inert, and cut short."""
    return inert(scope, SCOPE_CHARS)


class SignInState(StrEnum):
    SIGNED_IN = "signed in"
    NOT_SIGNED_IN = "not signed in"
    EXPIRED = "sign-in expired"
    WIDER = "wider sign-in asked"


@dataclass(frozen=True)
class SignIn:
    """A server's sign-in, as the MCP page and `mcp list` say it."""

    state: SignInState
    scopes: str = ""  # what the tokens were granted ("" when the server did not say)
    issuer: str = ""  # the authorization server's host
    wanted: str = ""  # the wider scope the server asked for (state WIDER)

    def sentence(self, name: str) -> str:
        if self.state is SignInState.EXPIRED:
            return f"The sign-in to {name} has expired: sign in again."
        if self.state is SignInState.NOT_SIGNED_IN:
            return f"Not signed in to {name}."
        if self.state is SignInState.WIDER:
            wanted = shown(self.wanted)
            return f"{name} asks for a wider sign-in (scopes: {wanted}): sign in to agree."
        extra = [f"scopes: {self.scopes}"] if self.scopes else []
        extra += [f"at {self.issuer}"] if self.issuer else []
        return f"Signed in to {name}" + (f" ({'; '.join(extra)})" if extra else "") + "."


class WiderSignIn(SignInError):
    """The server asked for a wider scope than the sign-in has (a step-up): `scope` is the
    whole scope a new sign-in asks for."""

    def __init__(self, name: str, scope: str) -> None:
        super().__init__(
            f"{name} asks for a wider sign-in (scopes: {shown(scope)}): agree by signing in again,"
            f" with `harmony-desk mcp login {name}` or the MCP page's Sign in",
            details="Its earlier sign-in is kept until the new one arrives; a connection never"
            " opens the browser by itself.",
        )
        self.name, self.scope = name, scope


def needs_sign_in(name: str, expired: bool) -> SignInError:
    why = "Its sign-in expired or the server refused it" if expired else "It has no sign-in"
    return SignInError(
        f"sign in to {name} first: `harmony-desk mcp login {name}` or the MCP page's Sign in",
        details=f"{why}; a connection never opens the browser by itself.",
    )


def stopped(name: str, scope: str, tries: int) -> SignInError:
    return SignInError(
        f"{name} still refuses after {tries} sign-ins for the scopes it asked for ({shown(scope)}):"
        " no further sign-in is asked for them; its owner must grant them to your account",
        details="Sign in again to start over.",
    )


class KeyringStorage:
    """The SDK's `TokenStorage`, over the keyring (see the module guarantees). A login
    (`interactive`) starts from no tokens and may register the client; a connection has the
    stored tokens only, and a registration there means a sign-in is needed."""

    def __init__(
        self,
        name: str,
        secrets: Secrets,
        interactive: bool = False,
        server: McpServer | None = None,
    ) -> None:
        self.name, self.secrets, self.interactive, self.server = name, secrets, interactive, server
        self.context: Any = None  # the provider's OAuthContext: its expiry and metadata
        self.stored = False  # whether tokens were stored through this storage
        self.wanted: str | None = None  # the wider scope this sign-in is for

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

    def secret(self, entry: str) -> str | None:
        """A pre-registered client's secret or private key (`oauth_client.py`)."""
        return self.secrets.get(secret_name(self.name, entry))

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
        context, before = self.context, self.record()
        record = {
            "tokens": tokens.model_dump(mode="json", exclude_none=True),
            "valid_until": context.token_expiry_time,
            "auth_server_url": context.auth_server_url,
            "authorization": _dumped(context.oauth_metadata),
            "resource": _dumped(context.protected_resource_metadata),
        }
        if not self.interactive:  # a refresh: what the server asked for still stands
            record.update({k: before[k] for k in ("wanted", "widened") if k in before})
        elif self.wanted:  # a step-up's sign-in: counted, for the bound
            widened = before.get("widened") or ["", 0]
            tries = int(widened[1]) + 1 if widened[0] == self.wanted else 1
            record["widened"] = [self.wanted, tries]
        self._write(TOKENS, record)

    def fixed_client(self) -> Any:
        """A pre-registered authorization-code client, from the configuration (None: none)."""
        from mcp.shared.auth import OAuthClientInformationFull

        client = self.server.oauth_client if self.server is not None else None
        if client is None or client.client_id is None or client.grant != "authorization_code":
            return None
        entry = client.entry if client.token_auth in ("basic", "post") else None
        secret = self.secret(entry) if entry is not None else None
        return OAuthClientInformationFull(
            client_id=client.client_id,
            client_secret=secret,
            token_endpoint_auth_method=client.method,
            issuer=client.issuer,
        )

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull
        from pydantic import ValidationError

        fixed = self.fixed_client()
        if fixed is not None:
            return fixed
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

    def want(self, scope: str) -> SignInError:
        """The server asked for `scope` (a step-up): recorded beside the kept tokens; the
        error to raise — `WiderSignIn`, or `stopped` once `MAX_STEP_UPS` sign-ins for it
        did not satisfy the server."""
        record = self.record()
        widened = record.get("widened") or ["", 0]
        if widened[0] == scope and int(widened[1]) >= MAX_STEP_UPS:
            return stopped(self.name, scope, int(widened[1]))
        if record.get("tokens"):
            self._write(TOKENS, {**record, "wanted": scope})
        return WiderSignIn(self.name, scope)

    def forget(self, entries: tuple[str, ...] = OAUTH_ENTRIES) -> bool:
        return any([self.secrets.delete(secret_name(self.name, e)) for e in entries])


def _dumped(model: Any) -> Any:
    return None if model is None else model.model_dump(mode="json", exclude_none=True)


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
    scopes = str(tokens.get("scope") or "")
    if record.get("wanted"):
        return SignIn(SignInState.WIDER, scopes, issuer, str(record["wanted"]))
    return SignIn(SignInState.SIGNED_IN, scopes, issuer)


__all__ = [
    "MAX_STEP_UPS",
    "KeyringStorage",
    "SignIn",
    "SignInState",
    "WiderSignIn",
    "needs_sign_in",
    "sign_in",
    "stopped",
]
