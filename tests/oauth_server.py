"""An MCP server behind a local OAuth 2.1 authorization server, both built with the `mcp` SDK's
own server-side auth and served on loopback by uvicorn in threads of the test process.

The authorization server (`create_auth_routes`: metadata, dynamic registration, authorize,
token with PKCE, revocation) runs on one port with `Grants`, an in-memory
`OAuthAuthorizationServerProvider` that approves every authorization at once by redirecting
to the client's redirect URI with a code; the resource server (an `MCPServer` with a token
verifier and its protected-resource metadata naming the authorization server) runs on another,
so the client must discover one from the other. `lifetime` is an access token's life in
seconds; `forget_all()` revokes every token on the server's side (a refresh then fails);
`grants` lists each token exchange ("authorization_code", "refresh_token"), `refused` each
bearer token the resource server would not take, `issued` every token string handed out.
"""

from __future__ import annotations

import secrets
import socket
import threading
import time
from typing import Any

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette

SCOPE = "mcp:tools"


class Grants:
    """The in-memory authorization server (see the module docstring)."""

    def __init__(self, lifetime: int) -> None:
        self.lifetime = lifetime
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, tuple[AccessToken, float]] = {}  # token → (it, when it expires)
        self.refresh: dict[str, RefreshToken] = {}
        self.challenges: list[str] = []  # each authorization's PKCE code_challenge
        self.grants: list[str] = []
        self.refused: list[str] = []
        self.issued: list[str] = []

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[str(client_info.client_id)] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(32)
        self.challenges.append(params.code_challenge)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [SCOPE], expires_at=time.time() + 300,
            client_id=str(client.client_id), code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri, resource=params.resource, subject="ada",
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
        )  # fmt: skip
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: Any, authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client: Any, authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.grants.append("authorization_code")
        return self._issue(authorization_code.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: Any, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: Any, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotated
        self.grants.append("refresh_token")
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"at-{secrets.token_hex(20)}", f"rt-{secrets.token_hex(20)}"
        self.issued += [access, refresh]
        self.access[access] = (AccessToken(token=access, client_id=client_id, scopes=scopes,
                                           resource=resource, subject="ada"),
                               time.time() + self.lifetime)  # fmt: skip
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             resource=resource, subject="ada")  # fmt: skip
        return OAuthToken(access_token=access, expires_in=self.lifetime, scope=" ".join(scopes),
                          refresh_token=refresh)  # fmt: skip

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or found[1] < time.time():
            self.refused.append(token)
            return None
        return found[0]

    async def verify_token(self, token: str) -> AccessToken | None:  # the resource server's
        return await self.load_access_token(token)

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def forget_all(self) -> None:
        self.access.clear()
        self.refresh.clear()


def _socket() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


def _resource(grants: Grants, issuer: str, url: str) -> Starlette:
    server = MCPServer("oauth-test", token_verifier=grants, auth=AuthSettings(
        issuer_url=AnyHttpUrl(issuer), resource_server_url=AnyHttpUrl(url),
        required_scopes=[SCOPE], validate_token_resource=False,
    ))  # fmt: skip

    @server.tool()
    def echo(text: str) -> str:
        """The text, back."""
        return text

    @server.tool()
    def whoami() -> str:
        """Who the bearer token belongs to, and its scopes."""
        token = get_access_token()
        return f"{token.subject} {' '.join(token.scopes)}" if token else "nobody"

    return server.streamable_http_app()


class OAuthServers:
    """Both servers, started (see the module docstring); `url` is the MCP endpoint."""

    def __init__(self, lifetime: int = 3600) -> None:
        self.grants = Grants(lifetime)
        auth_sock, mcp_sock = _socket(), _socket()
        self.issuer = f"http://127.0.0.1:{auth_sock.getsockname()[1]}"
        self.url = f"http://127.0.0.1:{mcp_sock.getsockname()[1]}/mcp"
        authorization = Starlette(routes=create_auth_routes(
            self.grants, AnyHttpUrl(self.issuer),
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]),
            revocation_options=RevocationOptions(enabled=True),
        ))  # fmt: skip
        self.servers = [self._serve(authorization, auth_sock),
                        self._serve(_resource(self.grants, self.issuer, self.url), mcp_sock)]  # fmt: skip

    @staticmethod
    def _serve(app: Any, sock: socket.socket, **options: Any) -> tuple[uvicorn.Server, threading.Thread]:
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", **options))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started, "the loopback server did not start"
        return server, thread

    def close(self) -> None:
        for server, thread in self.servers:
            server.should_exit = True
            thread.join(10)
