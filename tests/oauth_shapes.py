"""MCP servers in the authorization shapes the MCP spec allows, on loopback, for the sign-in
tests: built from the `mcp` SDK's server side (its `MCPServer`, authorization routes and
metadata) and `tests/oauth_server.py`'s in-memory `Grants`, served by uvicorn in threads.

`Shapes(...)` starts an authorization server and a resource server. The resource server guards
JSON-RPC methods one by one (`Guarded`): `protected` names the methods that need a bearer token
(None: every method), and a tool listed in `wider` needs that scope too, answered 403
`insufficient_scope` with the whole scope in the challenge (a step-up); `seen` records each
guarded request's method and its token's scopes. The authorization server is the SDK's
(`create_auth_routes`: authorize) with its own metadata (registration offered or not,
`client_id_metadata_document_supported`, client credentials) and its own token endpoint, which
authenticates a client the way it was registered — `client_secret_basic`, `client_secret_post`,
`private_key_jwt` (an RS256/ES256 assertion checked against the client's public key, audience
the issuer) or none — and grants `authorization_code` (PKCE S256 checked), `refresh_token` and,
for a client allowed it, `client_credentials`; `authenticated` records each token request's
method and grant; `withheld` scopes are never granted (a server that grants less than asked). `pre_registered` clients exist without registration; with `cimd` a client id
that is an https URL is fetched (`MetadataDocument`: served over TLS on loopback with a
certificate made for the test) and used as the client's metadata. Any loopback port is a valid
redirect for a registered `http://127.0.0.1/callback` (RFC 8252 §7.3); a client may ask for any
scope the server knows.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import ipaddress
import json
import ssl
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx2
import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from mcp.server.auth.routes import build_metadata, create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyHttpUrl, AnyUrl, Field
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.oauth_server import SCOPE, Grants, OAuthServers, _socket

ADMIN = "mcp:admin"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
__all__ = ["ADMIN", "SCOPE", "MetadataDocument", "Shapes", "key_pair"]


class LoopbackClient(OAuthClientInformationFull):
    """A client as the server judges it: any loopback port, any scope the server knows."""

    known_scopes: list[str] = Field(default_factory=list)
    public_key: str | None = None  # a private_key_jwt client's key (PEM)

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        parts = urlsplit(str(redirect_uri or ""))
        if parts.scheme == "http" and parts.hostname == "127.0.0.1" and parts.path == "/callback":
            return redirect_uri  # type: ignore[return-value]
        return super().validate_redirect_uri(redirect_uri)

    def validate_scope(self, requested_scope: str | None) -> list[str] | None:
        asked = (requested_scope or SCOPE).split()
        unknown = [s for s in asked if s not in self.known_scopes]
        if unknown:
            from mcp.shared.auth import InvalidScopeError

            raise InvalidScopeError(f"unknown scope {unknown[0]}")
        return asked


class ShapeGrants(Grants):
    """`Grants` with pre-registered clients, metadata documents and its own token endpoint."""

    def __init__(self, issuer: str, scopes: list[str], cimd_ca: str | None) -> None:
        super().__init__(3600)
        self.issuer, self.scopes, self.cimd_ca = issuer, scopes, cimd_ca
        self.pre_registered: dict[str, LoopbackClient] = {}
        self.fetched: list[str] = []  # metadata documents fetched
        self.authenticated: list[tuple[str, str]] = []  # (auth method, grant) per token request
        self.withheld: set[str] = set()  # scopes it never grants, whatever is asked

    async def authorize(self, client: OAuthClientInformationFull, params: Any) -> str:
        kept = [s for s in (params.scopes or [SCOPE]) if s not in self.withheld]
        return await super().authorize(client, params.model_copy(update={"scopes": kept}))

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        found = self.pre_registered.get(client_id) or self.clients.get(client_id)
        if found is None and self.cimd_ca is not None and client_id.startswith("https://"):
            found = await self._document(client_id)
        if found is None:
            return None
        data = found.model_dump(exclude_none=True)
        return LoopbackClient.model_validate({**data, "known_scopes": self.scopes})

    async def _document(self, url: str) -> OAuthClientInformationFull | None:
        context = ssl.create_default_context(cafile=self.cimd_ca)
        async with httpx2.AsyncClient(verify=context, timeout=10) as client:
            page = await client.get(url)
        self.fetched.append(url)
        document = page.json() if page.status_code == 200 else {}
        if document.get("client_id") != url:
            return None
        return OAuthClientInformationFull.model_validate(document)

    def add_client(self, client_id: str, method: str, secret: str = "", key: str = "") -> None:
        """A client the server's owner issued (`key`: a private_key_jwt client's public key)."""
        self.pre_registered[client_id] = LoopbackClient(
            client_id=client_id, client_secret=secret or None, token_endpoint_auth_method=method,
            grant_types=["authorization_code", "refresh_token", "client_credentials"],
            redirect_uris=[AnyUrl("http://127.0.0.1/callback")], public_key=key or None,
        )  # fmt: skip

    async def token(self, request: Request) -> Response:
        form = {k: str(v) for k, v in (await request.form()).items()}
        client, method = await self._client(request, form)
        if client is None:
            return JSONResponse({"error": "invalid_client", "error_description": method}, 401)
        grant = form.get("grant_type", "")
        self.authenticated.append((method, grant))
        if grant == "authorization_code":
            return self._code(client, form)
        if grant == "refresh_token" and form.get("refresh_token") in self.refresh:
            old = self.refresh.pop(form["refresh_token"])
            self.grants.append("refresh_token")
            return self._json(self._issue(old.client_id, old.scopes, old.resource))
        if grant == "client_credentials" and method != "none":
            self.grants.append("client_credentials")
            scopes = form.get("scope", SCOPE).split()
            return self._json(self._issue(str(client.client_id), scopes, form.get("resource")))
        return JSONResponse({"error": "invalid_grant"}, 400)

    def _code(self, client: OAuthClientInformationFull, form: dict[str, str]) -> Response:
        code = self.codes.pop(form.get("code", ""), None)
        verifier = form.get("code_verifier", "").encode()
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
        if (
            code is None
            or code.client_id != client.client_id
            or challenge.decode() != code.code_challenge
        ):
            return JSONResponse({"error": "invalid_grant"}, 400)
        self.grants.append("authorization_code")
        return self._json(self._issue(code.client_id, code.scopes, code.resource))

    @staticmethod
    def _json(token: Any) -> Response:
        return JSONResponse(
            token.model_dump(exclude_none=True), headers={"Cache-Control": "no-store"}
        )

    async def _client(self, request: Request, form: dict[str, str]) -> tuple[Any, str]:
        """(the authenticated client or None, its method or why it was refused)."""
        header = request.headers.get("Authorization", "")
        basic_id, basic_secret = "", ""
        if header.startswith("Basic "):
            basic_id, _, basic_secret = base64.b64decode(header[6:]).decode().partition(":")
            basic_id, basic_secret = unquote(basic_id), unquote(basic_secret)
        asserted = ""
        if form.get("client_assertion"):  # RFC 7523 §3: the client is the assertion's subject
            asserted = str(jwt.decode(form["client_assertion"], options={"verify_signature": False}).get("sub", ""))
        client = await self.get_client(form.get("client_id") or basic_id or asserted)
        if client is None:
            return None, "unknown client"
        method = client.token_endpoint_auth_method or "none"
        secret = str(client.client_secret or "")
        if method == "client_secret_basic":
            ok = (
                bool(secret)
                and basic_id == client.client_id
                and hmac.compare_digest(basic_secret, secret)
            )
        elif method == "client_secret_post":
            ok = bool(secret) and hmac.compare_digest(form.get("client_secret", ""), secret)
        elif method == "private_key_jwt":
            ok = self._assertion(client, form)
        else:
            ok = method == "none" and "client_secret" not in form and not header
        return (client, method) if ok else (None, f"{method} failed")

    def _assertion(self, client: Any, form: dict[str, str]) -> bool:
        if form.get("client_assertion_type") != ASSERTION_TYPE or not client.public_key:
            return False
        try:
            claims = jwt.decode(form.get("client_assertion", ""), client.public_key,
                                algorithms=["RS256", "ES256"], audience=[self.issuer, self.issuer + "/"])  # fmt: skip
        except jwt.PyJWTError:
            return False
        return bool(
            claims["iss"] == claims["sub"] == client.client_id and claims["exp"] > time.time()
        )


class Guarded:
    """The resource server: an ASGI app that guards JSON-RPC methods (see the module)."""

    def __init__(
        self, app: Any, grants: Grants, url: str, rule: Callable[[str, Any], str | None]
    ) -> None:
        self.app, self.grants, self.rule = app, grants, rule
        parts = urlsplit(url)
        self.prm_path = "/.well-known/oauth-protected-resource" + parts.path
        self.prm_url = f"{parts.scheme}://{parts.netloc}{self.prm_path}"
        self.prm: dict[str, Any] = {}
        self.seen: list[tuple[str, tuple[str, ...]]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == self.prm_path:
            return await JSONResponse(self.prm)(scope, receive, send)
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        body, more = b"", True
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)
        refused = await self._refused(scope, body)
        if refused is not None:
            return await refused(scope, receive, send)
        sent = [False]

        async def replay() -> Any:
            if not sent[0]:
                sent[0] = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refused(self, scope: Any, body: bytes) -> Response | None:
        try:
            message = json.loads(body)
        except ValueError:
            return None
        method = str(message.get("method", "")) if isinstance(message, dict) else ""
        needed = self.rule(method, message.get("params") or {}) if method else None
        if needed is None:
            return None
        headers = dict((k.decode().lower(), v.decode()) for k, v in scope["headers"])
        bearer = headers.get("authorization", "")
        token = await self.grants.verify_token(bearer[7:]) if bearer.startswith("Bearer ") else None
        where = f'resource_metadata="{self.prm_url}"'
        if token is None:
            said = f'Bearer error="invalid_token", scope="{SCOPE}", {where}'
            return JSONResponse({"error": "invalid_token"}, 401, {"WWW-Authenticate": said})
        if not set(needed.split()) <= set(token.scopes):
            said = f'Bearer error="insufficient_scope", scope="{needed}", {where}'
            return JSONResponse({"error": "insufficient_scope"}, 403, {"WWW-Authenticate": said})
        self.seen.append((method, tuple(token.scopes)))
        return None


def _mcp_app() -> Any:
    server = MCPServer("shapes-test")

    @server.tool()
    def echo(text: str) -> str:
        """The text, back."""
        return text

    @server.tool()
    def admin() -> str:
        """Something only an administrator may do."""
        return "admin done"

    return server.streamable_http_app()


class Shapes(OAuthServers):
    """Both servers in one shape, started (see the module docstring); `url` is the MCP endpoint."""

    def __init__(
        self,
        protected: Collection[str] | None = None,
        wider: dict[str, str] | None = None,
        registration: bool = True,
        cimd_ca: str | None = None,
        client_credentials: bool = False,
    ) -> None:
        auth_sock, mcp_sock = _socket(), _socket()
        self.issuer = f"http://127.0.0.1:{auth_sock.getsockname()[1]}"
        self.url = f"http://127.0.0.1:{mcp_sock.getsockname()[1]}/mcp"
        wider = wider or {}
        scopes = [SCOPE, *sorted(set(wider.values()))]
        self.grants = ShapeGrants(self.issuer, scopes, cimd_ca)
        self.guarded = Guarded(_mcp_app(), self.grants, self.url, self._rule(protected, wider))
        self.guarded.prm = {"resource": self.url, "authorization_servers": [str(AnyHttpUrl(self.issuer))],
                            "scopes_supported": [SCOPE], "bearer_methods_supported": ["header"]}  # fmt: skip
        self.servers = [
            self._serve(self._authorization(scopes, registration, cimd_ca is not None, client_credentials), auth_sock),
            self._serve(self.guarded, mcp_sock),
        ]  # fmt: skip

    @staticmethod
    def _rule(
        protected: Collection[str] | None, wider: dict[str, str]
    ) -> Callable[[str, Any], str | None]:
        def rule(method: str, params: Any) -> str | None:
            if protected is not None and method not in protected:
                return None
            tool = (
                params.get("name") if method == "tools/call" and isinstance(params, dict) else None
            )
            return f"{SCOPE} {wider[tool]}" if tool in wider else SCOPE

        return rule

    def _authorization(
        self, scopes: list[str], registration: bool, cimd: bool, machine: bool
    ) -> Starlette:
        metadata = build_metadata(AnyHttpUrl(self.issuer), None,
                                  ClientRegistrationOptions(enabled=registration, valid_scopes=scopes, default_scopes=[SCOPE]),
                                  RevocationOptions(enabled=False))  # fmt: skip
        metadata.client_id_metadata_document_supported = cimd or None
        metadata.token_endpoint_auth_methods_supported = [
            "none",
            "client_secret_basic",
            "client_secret_post",
            "private_key_jwt",
        ]
        if machine:
            metadata.grant_types_supported = [
                *(metadata.grant_types_supported or ()),
                "client_credentials",
            ]
        body = metadata.model_dump(mode="json", exclude_none=True)

        async def served(_request: Request) -> Response:
            return JSONResponse(body)

        sdk = create_auth_routes(self.grants, AnyHttpUrl(self.issuer),
                                 client_registration_options=ClientRegistrationOptions(
                                     enabled=registration, valid_scopes=scopes, default_scopes=[SCOPE]))  # fmt: skip
        return Starlette(routes=[
            Route("/.well-known/oauth-authorization-server", served, methods=["GET"]),
            Route("/token", self.grants.token, methods=["POST"]),
            *sdk,
        ])  # fmt: skip


def key_pair(kind: str = "rsa") -> tuple[str, str]:
    """(a private key, its public key), PEM: RSA 2048 or EC P-256."""
    key = (
        rsa.generate_private_key(65537, 2048)
        if kind == "rsa"
        else ec.generate_private_key(ec.SECP256R1())
    )
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()  # fmt: skip
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()  # fmt: skip
    return private, public


class MetadataDocument:
    """A Client ID Metadata Document served over https on loopback with a certificate made for
    the test (`ca`: the file the authorization server trusts); `url` is its address, the
    client id; `document` is what it serves (the test may change it)."""

    def __init__(self, folder: Path) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
        now = datetime.datetime.now(datetime.UTC)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(hours=1))
                .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
                .sign(key, hashes.SHA256()))  # fmt: skip
        self.ca, keyfile = str(folder / "cimd-cert.pem"), str(folder / "cimd-key.pem")
        Path(self.ca).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        Path(keyfile).write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                    serialization.NoEncryption()))  # fmt: skip
        sock = _socket()
        self.url = f"https://127.0.0.1:{sock.getsockname()[1]}/harmony-desk/client.json"
        self.document: dict[str, Any] = {
            "client_id": self.url, "client_name": "Harmony Desk (test)",
            "redirect_uris": ["http://127.0.0.1/callback"], "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"], "token_endpoint_auth_method": "none",
        }  # fmt: skip
        self.asked = 0

        async def served(_request: Request) -> Response:
            self.asked += 1
            return JSONResponse(self.document)

        app = Starlette(routes=[Route("/harmony-desk/client.json", served)])
        self.servers = [OAuthServers._serve(app, sock, ssl_certfile=self.ca, ssl_keyfile=keyfile)]

    def close(self) -> None:
        for server, thread in self.servers:
            server.should_exit = True
            thread.join(10)
