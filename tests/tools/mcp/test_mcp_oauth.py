"""Signing in to a remote MCP server with OAuth 2.1: a real MCP server behind a real local
authorization server (the `mcp` SDK's server-side auth, `tests/oauth_server.py`), the client's
discovery, dynamic registration, PKCE, refresh and sign-in state through the SDK's client auth,
tokens in a real Secret Service (a private D-Bus session) and in no file. The "browser" GETs the
authorization URL and follows the redirect to the app's loopback receiver."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from pydantic import ValidationError

from app.secrets import Secrets
from app.tools.mcp.client import McpConnection, McpError
from app.tools.mcp.config import McpServer, remove_server, save_servers, secret_name
from app.tools.mcp.oauth import SignInError, SignInState, login, logout, sign_in
from tests.keys.test_endpoints import cli, secret_service, secret_service_backend
from tests.oauth_server import SCOPE, OAuthServers
from tests.tools.mcp.test_mcp_config import _env, _files_hold

__all__ = ["secret_service"]
BROWSER = Path(__file__).resolve().parents[2] / "fixtures" / "oauth_browser.py"


def browse(url: str) -> bool:
    """The test's browser: the user approves at once."""
    page = httpx.get(url, follow_redirects=True, timeout=30)
    return page.status_code == 200


@pytest.fixture()
def keyring(secret_service: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Secrets:
    for kind in ("CONFIG", "DATA", "CACHE"):
        monkeypatch.setenv(f"HARMONY_DESK_{kind}", str(tmp_path / kind.lower()))
    return Secrets(secret_service_backend())


@pytest.fixture()
def servers() -> Iterator[OAuthServers]:
    both = OAuthServers()
    yield both
    both.close()


def _connect(name: str, server: McpServer, keyring: Secrets) -> McpConnection:
    return McpConnection(name, server, keyring).start(timeout=20)


def test_a_sign_in_registers_with_pkce_and_the_server_lists_and_calls_tools(
    keyring: Secrets, servers: OAuthServers, tmp_path: Path
) -> None:
    server = McpServer(url=servers.url, oauth=True)
    told: list[str] = []
    signed = login("docs", server, keyring, browse, timeout=30, told=told.append)
    assert signed.state is SignInState.SIGNED_IN and signed.scopes == SCOPE
    assert signed.sentence("docs") == f"Signed in to docs (scopes: {SCOPE}; at {servers.issuer[7:]})."
    assert told[0].startswith(f"{servers.issuer}/authorize?") and "code_challenge_method=S256" in told[0]
    grants = servers.grants
    assert len(grants.clients) == 1 and grants.grants == ["authorization_code"]  # registered, then one code
    assert len(grants.challenges) == 1 and len(grants.challenges[0]) == 43  # an S256 challenge
    client = next(iter(grants.clients.values()))
    assert client.token_endpoint_auth_method == "none" and str(client.redirect_uris[0]).startswith("http://127.0.0.1:")
    connection = _connect("docs", server, keyring)
    try:
        assert {t.name for t in connection.tools()} == {"echo", "whoami"}
        said = connection.call("whoami", {}, timeout=20)
        assert not said.is_error and said.content[0].text == f"ada {SCOPE}"
    finally:
        connection.close()
    assert grants.refused == [] or all(t not in grants.access for t in grants.refused)
    stored = keyring.get(secret_name("docs", "oauth-tokens")) or ""
    assert grants.issued[0] in stored and grants.issued[1] in stored  # the keyring holds them
    assert str(client.client_id) in (keyring.get(secret_name("docs", "oauth-client")) or "")
    for token in grants.issued:
        assert _files_hold(tmp_path, token) == []  # …and no file under the app's folders
    again = login("docs", server, keyring, browse, timeout=30)  # the registration is reused
    assert again.state is SignInState.SIGNED_IN and len(grants.clients) == 1
    save_servers({"docs": server})
    assert remove_server("docs", keyring) and sign_in("docs", keyring).state is SignInState.NOT_SIGNED_IN
    assert keyring.get(secret_name("docs", "oauth-client")) is None  # the server's sign-in went with it
    with pytest.raises(ValidationError, match="oauth is for a remote server"):
        McpServer(command="x", oauth=True)


def test_a_token_is_refreshed_before_it_expires_in_a_session_and_in_a_new_one(
    keyring: Secrets, tmp_path: Path
) -> None:
    servers = OAuthServers(lifetime=2)  # refreshed from 1 s on
    try:
        server = McpServer(url=servers.url, oauth=True)
        login("fresh", server, keyring, browse, timeout=30)
        connection = _connect("fresh", server, keyring)
        try:
            time.sleep(1.3)
            said = connection.call("echo", {"text": "after a refresh"}, timeout=20)
            assert said.content[0].text == "after a refresh"
        finally:
            connection.close()
        assert servers.grants.grants[:2] == ["authorization_code", "refresh_token"]
        time.sleep(1.3)  # the stored token is due again: a new run refreshes it from the keyring
        connection = _connect("fresh", server, keyring)
        try:
            assert connection.call("echo", {"text": "later"}, timeout=20).content[0].text == "later"
        finally:
            connection.close()
        assert servers.grants.grants.count("refresh_token") >= 2
        assert servers.grants.refused == []  # never an expired token sent: refreshed ahead
        assert sign_in("fresh", keyring).state is SignInState.SIGNED_IN
        for token in servers.grants.issued:
            assert _files_hold(tmp_path, token) == []
    finally:
        servers.close()


def test_a_revoked_sign_in_fails_at_once_and_asks_to_sign_in_again(
    keyring: Secrets, servers: OAuthServers
) -> None:
    server = McpServer(url=servers.url, oauth=True)
    with pytest.raises(McpError, match="sign in to revoked first: `harmony-desk mcp login revoked`"):
        _connect("revoked", server, keyring)  # never signed in: refused before any request
    assert sign_in("revoked", keyring).state is SignInState.NOT_SIGNED_IN
    login("revoked", server, keyring, browse, timeout=30)
    servers.grants.forget_all()  # the server revokes the tokens: 401, and no refresh
    keyring.set(secret_name("revoked", "oauth-tokens"), _due(keyring, "revoked"))  # so a refresh is tried
    began = time.monotonic()
    with pytest.raises(McpError) as refused:
        _connect("revoked", server, keyring)
    assert time.monotonic() - began < 15  # no browser, no wait on a person
    assert "sign in to revoked first: `harmony-desk mcp login revoked` or the MCP page's Sign in" in refused.value.message
    assert sign_in("revoked", keyring).state is SignInState.EXPIRED
    assert servers.grants.grants[-1] == "authorization_code"  # the refresh was refused, not granted
    assert not any(t in (keyring.get(secret_name("revoked", "oauth-tokens")) or "") for t in servers.grants.issued)
    login("revoked", server, keyring, browse, timeout=30)  # signing in again mends it
    connection = _connect("revoked", server, keyring)
    servers.grants.forget_all()  # revoked while the connection is open: the next request says so
    with pytest.raises(McpError, match="sign in to revoked first"):
        connection.tools(timeout=15)
    connection.close()
    login("revoked", server, keyring, browse, timeout=30)
    servers.grants.forget_all()  # revoked with time left on it: the server's 401 says so
    with pytest.raises(McpError, match="sign in to revoked first"):
        _connect("revoked", server, keyring)
    assert sign_in("revoked", keyring).state is SignInState.EXPIRED
    assert logout("revoked", keyring) and sign_in("revoked", keyring).state is SignInState.NOT_SIGNED_IN
    assert keyring.get(secret_name("revoked", "oauth-client")) is None  # the registration is forgotten
    assert not logout("revoked", keyring)


def test_a_sign_in_the_browser_never_finishes_ends_at_its_deadline(keyring: Secrets, servers: OAuthServers) -> None:
    server = McpServer(url=servers.url, oauth=True)
    began = time.monotonic()
    with pytest.raises(SignInError, match="Signing in to idle did not finish within 1 s"):
        login("idle", server, keyring, lambda _url: True, timeout=1)  # the user never approves
    assert time.monotonic() - began < 10 and sign_in("idle", keyring).state is SignInState.NOT_SIGNED_IN
    with pytest.raises(SignInError, match="does not sign in with OAuth"):
        login("idle", McpServer(url=servers.url), keyring, browse)


def _due(keyring: Secrets, name: str) -> str:
    """The stored sign-in, its refresh due now."""
    record = json.loads(keyring.get(secret_name(name, "oauth-tokens")) or "{}")
    return json.dumps({**record, "valid_until": time.time() - 1})


def _browser(tmp_path: Path) -> str:
    script = tmp_path / "browser"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{BROWSER}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_the_cli_adds_signs_in_lists_calls_and_signs_out(
    secret_service: dict[str, str], servers: OAuthServers, tmp_path: Path
) -> None:
    env = {**_env(tmp_path, secret_service), "BROWSER": _browser(tmp_path)}
    added = cli(["mcp", "add", "forge", "--url", servers.url, "--oauth"], env)
    assert added.returncode == 0 and "mcp login forge" in added.stderr, added.stderr
    listed = json.loads(cli(["mcp", "list"], env).stdout)
    assert listed["oauth"] is True and listed["sign_in"] == "not signed in"
    before = cli(["mcp", "call", "forge", "echo", '{"text": "hi"}'], env)
    assert before.returncode == 2 and "sign in to forge first" in before.stderr, before.stderr
    signed = cli(["mcp", "login", "forge", "--timeout", "60"], env)
    assert signed.returncode == 0, signed.stderr
    assert f"Signed in to forge (scopes: {SCOPE}; at {servers.issuer[7:]})." in signed.stderr
    assert f"{servers.issuer}/authorize?" in signed.stderr  # the address, for a browser that did not open
    assert json.loads(cli(["mcp", "list"], env).stdout)["sign_in"] == "signed in"
    called = cli(["mcp", "call", "forge", "whoami", "{}"], env)
    assert called.returncode == 0 and f"ada {SCOPE}" in called.stdout, called.stderr
    tested = json.loads(cli(["mcp", "test", "forge"], env).stdout)
    assert tested["sign_in"] == "signed in" and set(tested["tools"]) == {"forge__echo", "forge__whoami"}
    for token in servers.grants.issued:
        assert _files_hold(tmp_path, token) == []
    out = cli(["mcp", "logout", "forge"], env)
    assert out.returncode == 0 and "Signed out of forge" in out.stderr
    after = cli(["mcp", "call", "forge", "echo", '{"text": "hi"}'], env)
    assert after.returncode == 2 and "sign in to forge first" in after.stderr


def test_the_mcp_page_shows_the_sign_in_and_signs_in_and_out(
    qtbot: Any, qloop: Any, keyring: Secrets, servers: OAuthServers, tmp_path: Path
) -> None:
    from tests.ui.test_window import make_window

    save_servers({"notes": McpServer(url=servers.url, oauth=True), "plain": McpServer(command="x")})
    window, _ = make_window(qtbot, tmp_path, [])
    window.mcp._secrets = window.mcp.pool._secrets = keyring
    window.mcp.opener = browse
    page = window.show_mcp()
    qtbot.addWidget(page)
    qtbot.waitUntil(lambda: page.servers.count() == 2, timeout=10_000)
    page.servers.setCurrentRow([page.servers.item(i).text() for i in range(2)].index("plain"))
    assert not page.sign_row.isVisible() and not page.oauth.isChecked()
    page.servers.setCurrentRow([page.servers.item(i).text() for i in range(2)].index("notes"))
    assert page.oauth.isChecked()
    qtbot.waitUntil(lambda: page.sign_row.state.text() == "Not signed in", timeout=10_000)
    assert page.sign_row.isVisible() and not page.sign_row.sign_out_button.isEnabled()
    page.sign_row.sign_in_button.click()
    assert not page.sign_row.sign_in_button.isEnabled()  # one sign-in at a time
    qtbot.waitUntil(lambda: page.sign_row.state.text().startswith("Signed in"), timeout=30_000)
    assert page.sign_row.sign_in_button.isEnabled() and page.sign_row.sign_out_button.isEnabled()
    assert page.sign_row.state.text() == f"Signed in (scopes: {SCOPE})"
    assert page.status.text().startswith("Signed in to notes")
    page.test_button.click()
    qtbot.waitUntil(lambda: page.tools.count() == 2 or page.problem_banner.isVisible(), timeout=30_000)
    assert page.tools.count() == 2, page.problem_banner.text()
    servers.grants.forget_all()
    window.mcp.pool.stop("notes")  # its next connection, as in a later run
    page.test_button.click()
    qtbot.waitUntil(lambda: page.problem_banner.isVisible(), timeout=30_000)
    assert "sign in to notes first" in page.problem_banner.text()
    qtbot.waitUntil(lambda: page.sign_row.state.text() == "Sign-in expired", timeout=10_000)
    page.sign_row.sign_out_button.click()
    qtbot.waitUntil(lambda: page.sign_row.state.text() == "Not signed in", timeout=10_000)
    assert page.status.text() == "Signed out of notes."
    window.mcp.pool.close()
    for token in servers.grants.issued:
        assert _files_hold(tmp_path, token) == []
    assert os.environ["HARMONY_DESK_CONFIG"].startswith(str(tmp_path))
