"""Who Harmony Desk is to an MCP server's authorization server: the `oauth_client` part of a
server in `mcp.json`, as the MCP authorization spec offers it.

Guarantees: without it (or with an empty one) the app registers itself dynamically, as a
public client; `client_id` is a client the server's owner issued (pre-registered: the sign-in
never registers then), authenticated at the token endpoint by `token_auth` — `none`, `basic`
(client_secret_basic), `post` (client_secret_post) or `private_key_jwt` (a signed assertion,
RFC 7523) — whose secret or private key lives in the keyring only (`SECRET`, `PRIVATE_KEY`
entries beside the server's other secrets, never in the file); `metadata_url` is a Client ID
Metadata Document (SEP-991: https, a path that is not the root) used as the client id where the
authorization server advertises `client_id_metadata_document_supported`, dynamic registration
otherwise; `grant = "client_credentials"` is a machine-to-machine client that needs no person
(opt-in: it needs a pre-registered client id that authenticates, and the `issuer` its
credentials belong to, so they are sent nowhere else); `scope` is asked for at every sign-in.
A combination that cannot work is refused with a sentence that says what is missing.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator

TokenAuth = Literal["none", "basic", "post", "private_key_jwt"]
Grant = Literal["authorization_code", "client_credentials"]
SECRET, PRIVATE_KEY = "oauth-client-secret", "oauth-private-key"  # keyring entries
CLIENT_ENTRIES = (SECRET, PRIVATE_KEY)
METHODS: dict[str, str] = {  # ours → the token endpoint's auth method names (RFC 7591)
    "none": "none",
    "basic": "client_secret_basic",
    "post": "client_secret_post",
    "private_key_jwt": "private_key_jwt",
}


def _https_path(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "https" and bool(parts.netloc) and parts.path not in ("", "/")


class OAuthClient(BaseModel):
    """See the module guarantees."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    client_id: str | None = Field(
        None, min_length=1, max_length=500, description="A client id the server's owner issued."
    )
    token_auth: TokenAuth = Field(
        "none", description="How the client proves itself at the token endpoint."
    )
    metadata_url: str | None = Field(
        None, max_length=2000, description="A Client ID Metadata Document's https URL (SEP-991)."
    )
    grant: Grant = Field(
        "authorization_code", description="client_credentials: a server that needs no person."
    )
    issuer: str | None = Field(
        None, max_length=2000, description="The authorization server the client id belongs to."
    )
    scope: str | None = Field(None, max_length=2000, description="Scopes asked for at sign-in.")

    @model_validator(mode="after")
    def _workable(self) -> OAuthClient:
        if self.token_auth != "none" and self.client_id is None:
            raise ValueError(f"token auth {self.token_auth!r} needs a client id")
        if self.metadata_url is not None and not _https_path(self.metadata_url):
            raise ValueError("a client metadata URL is https with a path (not the site's root)")
        if self.metadata_url is not None and self.client_id is not None:
            raise ValueError("give a client id or a client metadata URL, not both")
        if self.issuer is not None and not self.issuer.startswith(("https://", "http://")):
            raise ValueError("the issuer is the authorization server's http(s) address")
        if self.grant == "client_credentials":
            if self.client_id is None or self.token_auth == "none":
                raise ValueError(
                    "client credentials need a client id with a secret or a private key"
                    " (--token-auth basic, post or private_key_jwt)"
                )
            if self.issuer is None:
                raise ValueError(
                    "client credentials need the issuer they belong to (--issuer URL), so"
                    " they are sent to no other server"
                )
        return self

    @property
    def entry(self) -> str | None:
        """The keyring entry of its secret or private key (None: it has none)."""
        if self.token_auth in ("basic", "post"):
            return SECRET
        return PRIVATE_KEY if self.token_auth == "private_key_jwt" else None

    @property
    def method(self) -> str:
        return METHODS[self.token_auth]


def signing_algorithm(pem: str) -> str:
    """The JWS algorithm for a PEM private key (RS256 for RSA, ES256/384/512 for EC keys,
    EdDSA for Ed25519); a ValueError in words for anything else."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError) as exc:
        raise ValueError("not an unencrypted PEM private key (PKCS#8 or traditional)") from exc
    if isinstance(key, rsa.RSAPrivateKey):
        return "RS256"
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return {256: "ES256", 384: "ES384", 521: "ES512"}.get(key.curve.key_size, "ES256")
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    raise ValueError("the private key is neither RSA, EC nor Ed25519")


__all__ = [
    "CLIENT_ENTRIES",
    "METHODS",
    "PRIVATE_KEY",
    "SECRET",
    "Grant",
    "OAuthClient",
    "TokenAuth",
    "signing_algorithm",
]
