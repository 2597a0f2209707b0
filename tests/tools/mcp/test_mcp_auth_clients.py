"""Client identity as the MCP authorization spec offers it, against real servers the tests start
(`tests/oauth_shapes.py`): a pre-registered client (client_secret_basic, client_secret_post,
private_key_jwt) at an authorization server with no registration endpoint, a Client ID Metadata
Document served over https on loopback, and client credentials for a server that needs no
person — each through `harmony-desk mcp …` as a subprocess, its secret or key in a real Secret
Service (a private D-Bus session) and in no file the app writes."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.secrets import Secrets
from app.tools.mcp.client import McpConnection
from app.tools.mcp.config import McpServer, load_servers, secret_name
from app.tools.mcp.oauth import SignInError, SignInState, login
from app.tools.mcp.oauth_client import OAuthClient
from tests.keys.test_endpoints import cli, secret_service, secret_service_backend
from tests.oauth_shapes import SCOPE, MetadataDocument, Shapes, key_pair
from tests.tools.mcp.test_mcp_config import _env, _files_hold
from tests.tools.mcp.test_mcp_oauth import _browser, browse, keyring

__all__ = ["keyring", "secret_service"]
SECRET = "s3cret-issued-by-the-owner-0123456789"


@pytest.fixture()
def closed() -> Iterator[Shapes]:
    """An authorization server that registers nobody: its clients are issued by its owner."""
    shape = Shapes(registration=False)
    yield shape
    shape.close()


def test_without_registration_and_without_a_client_id_the_sign_in_says_what_to_give(
    keyring: Secrets, closed: Shapes
) -> None:
    opened: list[str] = []
    with pytest.raises(SignInError) as refused:
        login("closed", McpServer(url=closed.url, oauth=True), keyring, opened.append, timeout=10)
    assert "Signing in to closed needs a client id: its authorization server offers no registration" in refused.value.message
    assert "--client-id ID" in refused.value.message
    assert opened == [] and closed.grants.clients == {}  # no browser, nothing registered anywhere


@pytest.mark.parametrize(("auth", "method"), [("basic", "client_secret_basic"), ("post", "client_secret_post"),
                                              ("private_key_jwt", "private_key_jwt")])  # fmt: skip
def test_a_pre_registered_client_signs_in_and_refreshes_with_its_own_authentication(
    secret_service: dict[str, str], closed: Shapes, tmp_path: Path, auth: str, method: str
) -> None:
    env = {**_env(tmp_path, secret_service), "BROWSER": _browser(tmp_path)}
    name = f"pre-{auth.replace('_', '-')}"  # the Secret Service lives for the whole module
    private, public = key_pair("rsa")
    keyfile = tmp_path / "client-key.pem"
    keyfile.write_text(private)
    closed.grants.add_client("desk", method, secret=SECRET if auth != "private_key_jwt" else "", key=public)
    given = ["--private-key", str(keyfile)] if auth == "private_key_jwt" else ["--client-secret-stdin"]
    added = cli(["mcp", "add", name, "--url", closed.url, "--oauth", "--client-id", "desk",
                 "--token-auth", auth, *given], env, stdin=SECRET + "\n")  # fmt: skip
    assert added.returncode == 0, added.stderr
    config = json.loads((tmp_path / "config" / "mcp.json").read_text())["mcpServers"][name]
    assert config["oauth_client"] == {"client_id": "desk", "token_auth": auth}
    keyfile.unlink()  # the keyring holds the key now; the user's file is theirs
    signed = cli(["mcp", "login", name, "--timeout", "60"], env)
    assert signed.returncode == 0 and f"Signed in to {name} (scopes: {SCOPE};" in signed.stderr, signed.stderr
    assert closed.grants.authenticated == [(method, "authorization_code")]
    assert closed.grants.clients == {}  # never registered
    keyring = Secrets(secret_service_backend())
    record = json.loads(keyring.get(secret_name(name, "oauth-tokens")) or "{}")
    keyring.set(secret_name(name, "oauth-tokens"), json.dumps({**record, "valid_until": time.time() - 1}))
    called = cli(["mcp", "call", name, "echo", '{"text": "hello"}'], env)  # refreshed first
    assert called.returncode == 0 and "hello" in called.stdout, called.stderr
    assert closed.grants.authenticated[-1] == (method, "refresh_token")
    for held in (SECRET, private.splitlines()[1], *closed.grants.issued):
        assert _files_hold(tmp_path / "config", held) == [] and _files_hold(tmp_path / "data", held) == []
    removed = cli(["mcp", "remove", name], env)
    assert removed.returncode == 0
    for entry in ("oauth-client-secret", "oauth-private-key", "oauth-tokens"):
        assert keyring.get(secret_name(name, entry)) is None


def test_options_that_cannot_work_are_refused_before_anything_is_written(
    secret_service: dict[str, str], tmp_path: Path
) -> None:
    env = _env(tmp_path, secret_service)
    url = "https://mcp.example.invalid/mcp"
    for options, said in (
        (["--client-id", "x", "--token-auth", "basic"], "--token-auth basic needs --client-secret-stdin"),
        (["--token-auth", "post"], "token auth 'post' needs a client id"),
        (["--client-id", "x", "--token-auth", "private_key_jwt"], "needs --private-key FILE"),
        (["--client-id", "x", "--token-auth", "none", "--private-key", str(tmp_path)], "--private-key is for"),
        (["--client-metadata-url", "http://example.invalid/c.json"], "https with a path"),
        (["--client-id", "x", "--token-auth", "basic", "--client-secret-stdin", "--grant", "client_credentials"],
         "client credentials need the issuer"),
    ):  # fmt: skip
        added = cli(["mcp", "add", "bad", "--url", url, "--oauth", *options], env, stdin="v\n")
        assert added.returncode == 2 and said in added.stderr, (options, added.stderr)
    bad_key = tmp_path / "not-a-key.pem"
    bad_key.write_text("-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n")
    added = cli(["mcp", "add", "bad", "--url", url, "--oauth", "--client-id", "x", "--token-auth",
                 "private_key_jwt", "--private-key", str(bad_key)], env)  # fmt: skip
    assert added.returncode == 2 and "is not a usable private key" in added.stderr, added.stderr
    assert not (tmp_path / "config" / "mcp.json").exists()
    with pytest.raises(ValidationError, match="an OAuth client is for a server that signs in"):
        McpServer(url=url, oauth_client=OAuthClient(client_id="x"))


def test_a_client_metadata_document_is_the_client_id_where_the_server_takes_one(
    keyring: Secrets, tmp_path: Path
) -> None:
    document = MetadataDocument(tmp_path)
    takes, registers = Shapes(registration=False, cimd_ca=document.ca), Shapes()
    try:
        client = OAuthClient(metadata_url=document.url)
        server = McpServer(url=takes.url, oauth=True, oauth_client=client)
        signed = login("cimd", server, keyring, browse, timeout=30)
        assert signed.state is SignInState.SIGNED_IN and takes.grants.clients == {}
        assert takes.grants.fetched and set(takes.grants.fetched) == {document.url}
        assert takes.grants.authenticated == [("none", "authorization_code")]
        connection = McpConnection("cimd", server, keyring).start(timeout=20)
        try:
            assert connection.call("echo", {"text": "by url"}, timeout=15).content[0].text == "by url"
        finally:
            connection.close()
        elsewhere = McpServer(url=registers.url, oauth=True, oauth_client=client)
        login("dcr", elsewhere, keyring, browse, timeout=30)  # no support advertised: it registers
        assert len(registers.grants.clients) == 1 and document.asked == len(takes.grants.fetched)
    finally:
        for server in (takes, registers, document):
            server.close()


def test_the_cli_sets_a_client_metadata_url(secret_service: dict[str, str], tmp_path: Path) -> None:
    document = MetadataDocument(tmp_path)
    shape = Shapes(registration=False, cimd_ca=document.ca)
    try:
        env = {**_env(tmp_path, secret_service), "BROWSER": _browser(tmp_path)}
        added = cli(["mcp", "add", "by-url", "--url", shape.url, "--oauth", "--client-metadata-url", document.url], env)
        assert added.returncode == 0, added.stderr
        assert load_servers(tmp_path / "config" / "mcp.json")["by-url"].oauth_client == OAuthClient(metadata_url=document.url)
        signed = cli(["mcp", "login", "by-url", "--timeout", "60"], env)
        assert signed.returncode == 0 and "Signed in to by-url" in signed.stderr, signed.stderr
        assert f"client_id={document.url.replace(':', '%3A').replace('/', '%2F')}" in signed.stderr
        assert shape.grants.clients == {} and document.url in shape.grants.fetched
    finally:
        shape.close()
        document.close()


@pytest.mark.parametrize("auth", ["basic", "private_key_jwt"])
def test_client_credentials_need_no_person(
    secret_service: dict[str, str], tmp_path: Path, auth: str
) -> None:
    shape = Shapes(client_credentials=True)
    try:
        env = _env(tmp_path, secret_service)  # no browser at all
        name = f"bot-{auth.replace('_', '-')}"
        private, public = key_pair("ec")
        keyfile = tmp_path / "robot.pem"
        keyfile.write_text(private)
        method = "client_secret_basic" if auth == "basic" else "private_key_jwt"
        shape.grants.add_client("robot", method, secret=SECRET if auth == "basic" else "", key=public)
        given = ["--client-secret-stdin"] if auth == "basic" else ["--private-key", str(keyfile)]
        added = cli(["mcp", "add", name, "--url", shape.url, "--oauth", "--client-id", "robot", "--token-auth",
                     auth, *given, "--grant", "client_credentials", "--issuer", shape.issuer], env,
                    stdin=SECRET + "\n")  # fmt: skip
        assert added.returncode == 0, added.stderr
        called = cli(["mcp", "call", name, "echo", '{"text": "machine"}'], env)  # no login first
        assert called.returncode == 0 and "machine" in called.stdout, called.stderr
        assert shape.grants.grants == ["client_credentials"]
        assert shape.grants.authenticated == [(method, "client_credentials")]
        assert json.loads(cli(["mcp", "list"], env).stdout)["sign_in"] == "signed in"
        signed = cli(["mcp", "login", name], env)
        assert signed.returncode == 0 and f"Signed in to {name} (scopes: {SCOPE};" in signed.stderr, signed.stderr
        assert "Opening the browser" not in signed.stderr
        for token in shape.grants.issued:
            assert _files_hold(tmp_path, token) == []
    finally:
        shape.close()
