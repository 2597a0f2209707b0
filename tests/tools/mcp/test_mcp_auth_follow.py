"""Sign-in that follows the server: real MCP servers that protect some methods only, or ask for a
wider scope for one tool (`tests/oauth_shapes.py`: the `mcp` SDK's servers on loopback), signed in
through the SDK's client auth with tokens in a real Secret Service (a private D-Bus session) —
through the API, `harmony-desk mcp …` as a subprocess (its "browser" a script that approves)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.secrets import Secrets
from app.tools.mcp.client import McpConnection, McpError
from app.tools.mcp.config import McpServer, secret_name
from app.tools.mcp.oauth import SignInError, SignInState, WiderSignIn, login, sign_in
from app.tools.mcp.oauth_state import MAX_STEP_UPS
from tests.keys.test_endpoints import cli, secret_service
from tests.oauth_shapes import ADMIN, SCOPE, Shapes
from tests.tools.mcp.test_mcp_config import _env, _files_hold
from tests.tools.mcp.test_mcp_oauth import _browser, browse, keyring

__all__ = ["keyring", "secret_service"]
WIDE = f"{SCOPE} {ADMIN}"


@pytest.fixture()
def lists_only() -> Iterator[Shapes]:
    shape = Shapes(protected={"tools/list", "tools/call"})
    yield shape
    shape.close()


@pytest.fixture()
def step_up() -> Iterator[Shapes]:
    shape = Shapes(wider={"admin": ADMIN})
    yield shape
    shape.close()


def _tokens(keyring: Secrets, name: str) -> dict[str, Any]:
    return json.loads(keyring.get(secret_name(name, "oauth-tokens")) or "{}")


def test_a_401_on_tools_list_is_a_sign_in_in_the_login_and_in_the_connection(
    keyring: Secrets, lists_only: Shapes
) -> None:
    server = McpServer(url=lists_only.url, oauth=True)
    connection = McpConnection("lists", server, keyring).start(timeout=20)  # initialize is open
    try:
        with pytest.raises(McpError) as refused:
            connection.tools(timeout=15)
        assert "sign in to lists first: `harmony-desk mcp login lists`" in refused.value.message
        assert isinstance(refused.value.sign_in, SignInError)
        assert connection.alive  # the refusal failed the request, not the connection
    finally:
        connection.close()
    assert lists_only.grants.clients == {}  # a connection never registers the app
    signed = login("lists", server, keyring, browse, timeout=30)  # tools/list asks: a sign-in
    assert signed.state is SignInState.SIGNED_IN and signed.scopes == SCOPE
    assert lists_only.grants.grants == ["authorization_code"]
    connection = McpConnection("lists", server, keyring).start(timeout=20)
    try:
        assert {t.name for t in connection.tools(timeout=15)} == {"echo", "admin"}
        assert connection.call("echo", {"text": "in"}, timeout=15).content[0].text == "in"
    finally:
        connection.close()
    assert [m for m, _ in lists_only.guarded.seen][-2:] == ["tools/list", "tools/call"]


def test_a_server_that_asks_for_nothing_still_works_without_oauth(keyring: Secrets) -> None:
    shape = Shapes(protected=set())
    try:
        with pytest.raises(SignInError, match="it answered initialize and its lists without one"):
            login("open", McpServer(url=shape.url, oauth=True), keyring, browse, timeout=30)
        assert shape.grants.grants == []
    finally:
        shape.close()


def test_a_step_up_keeps_the_tokens_asks_for_the_wider_scope_and_is_bounded(
    keyring: Secrets, step_up: Shapes
) -> None:
    server = McpServer(url=step_up.url, oauth=True)
    assert login("steps", server, keyring, browse, timeout=30).scopes == SCOPE
    first = _tokens(keyring, "steps")["tokens"]["access_token"]
    connection = McpConnection("steps", server, keyring).start(timeout=20)
    try:
        with pytest.raises(McpError) as refused:
            connection.call("admin", {}, timeout=15)
        wider = refused.value.sign_in
        assert isinstance(wider, WiderSignIn) and wider.scope == WIDE
        assert f"steps asks for a wider sign-in (scopes: {WIDE})" in refused.value.message
        assert connection.call("echo", {"text": "still"}, timeout=15).content[0].text == "still"
    finally:
        connection.close()
    assert _tokens(keyring, "steps")["tokens"]["access_token"] == first  # kept on a 403
    state = sign_in("steps", keyring)
    assert state.state is SignInState.WIDER and state.wanted == WIDE and state.scopes == SCOPE

    held: list[str] = []

    def approve(url: str) -> bool:  # the old tokens stand until the new ones arrive
        held.append(_tokens(keyring, "steps")["tokens"]["access_token"])
        assert f"scope={WIDE.replace(' ', '+').replace(':', '%3A')}" in url
        return browse(url)

    signed = login("steps", server, keyring, approve, timeout=30)  # the wider scope, remembered
    assert held == [first] and signed.state is SignInState.SIGNED_IN and signed.scopes == WIDE
    connection = McpConnection("steps", server, keyring).start(timeout=20)
    try:
        assert connection.call("admin", {}, timeout=15).content[0].text == "admin done"
    finally:
        connection.close()
    assert ("tools/call", tuple(WIDE.split())) in step_up.guarded.seen


def test_sign_ins_for_a_scope_the_server_never_grants_stop_with_a_sentence(
    keyring: Secrets, step_up: Shapes
) -> None:
    step_up.grants.withheld = {ADMIN}  # its authorization server grants less than asked
    server = McpServer(url=step_up.url, oauth=True)
    login("stuck", server, keyring, browse, timeout=30)
    for _ in range(MAX_STEP_UPS):
        connection = McpConnection("stuck", server, keyring).start(timeout=20)
        try:
            with pytest.raises(McpError) as refused:
                connection.call("admin", {}, timeout=15)
        finally:
            connection.close()
        assert isinstance(refused.value.sign_in, WiderSignIn)
        login("stuck", server, keyring, browse, timeout=30)
    connection = McpConnection("stuck", server, keyring).start(timeout=20)
    try:
        with pytest.raises(McpError) as stopped:
            connection.call("admin", {}, timeout=15)
    finally:
        connection.close()
    assert not isinstance(stopped.value.sign_in, WiderSignIn)
    assert f"stuck still refuses after {MAX_STEP_UPS} sign-ins for the scopes it asked for" in stopped.value.message
    assert sign_in("stuck", keyring).state is SignInState.SIGNED_IN  # no further ask recorded
    assert step_up.grants.grants.count("authorization_code") == MAX_STEP_UPS + 1


def test_the_cli_signs_in_where_tools_list_asks_and_steps_up_after_a_question(
    secret_service: dict[str, str], step_up: Shapes, tmp_path: Path
) -> None:
    env = {**_env(tmp_path, secret_service), "BROWSER": _browser(tmp_path)}
    assert cli(["mcp", "add", "ops", "--url", step_up.url, "--oauth"], env).returncode == 0
    signed = cli(["mcp", "login", "ops", "--timeout", "60"], env)
    assert signed.returncode == 0 and f"Signed in to ops (scopes: {SCOPE};" in signed.stderr, signed.stderr
    refused = cli(["mcp", "call", "ops", "admin", "{}", "--yes"], env)
    assert refused.returncode == 2 and "A --yes run asks nothing" in refused.stderr, refused.stderr
    assert f"ops asks for a wider sign-in (scopes: {WIDE})" in refused.stderr
    assert json.loads(cli(["mcp", "list"], env).stdout)["sign_in"] == "wider sign-in asked"
    declined = cli(["mcp", "call", "ops", "admin", "{}"], env, stdin="n\n")
    assert declined.returncode == 2 and "Sign in again in the browser? [y/N]" in declined.stderr
    assert step_up.grants.grants == ["authorization_code"]  # nothing signed in on a no
    agreed = cli(["mcp", "call", "ops", "admin", "{}"], env, stdin="y\n")
    assert agreed.returncode == 0, agreed.stderr
    assert json.loads(agreed.stdout)["ok"] and "admin done" in agreed.stdout
    assert f"Signed in to ops (scopes: {WIDE};" in agreed.stderr
    assert json.loads(cli(["mcp", "list"], env).stdout)["sign_in"] == "signed in"
    for token in step_up.grants.issued:
        assert _files_hold(tmp_path, token) == []


def test_the_cli_login_probes_tools_list(secret_service: dict[str, str], lists_only: Shapes, tmp_path: Path) -> None:
    env = {**_env(tmp_path, secret_service), "BROWSER": _browser(tmp_path)}
    assert cli(["mcp", "add", "listed", "--url", lists_only.url, "--oauth"], env).returncode == 0
    before = cli(["mcp", "tools", "listed"], env)
    assert before.returncode == 2 and "sign in to listed first" in before.stderr, before.stderr
    signed = cli(["mcp", "login", "listed", "--timeout", "60"], env)
    assert signed.returncode == 0 and "Signed in to listed" in signed.stderr, signed.stderr
    assert "works without OAuth" not in signed.stderr
    tools = [json.loads(line)["name"] for line in cli(["mcp", "tools", "listed"], env).stdout.splitlines()]
    assert sorted(tools) == ["admin", "echo"]
