"""The window's MCP page (offscreen) against real servers in two authorization shapes
(`tests/oauth_shapes.py`): a pre-registered client typed into the page's OAuth client box and
signed in with it at a server that registers nobody, and a step-up that a chat's call meets and
the page's Sign in agrees to — tokens and the client's secret or key in a real Secret Service
(a private D-Bus session), in no file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.secrets import Secrets
from app.tools.mcp.client import McpError
from app.tools.mcp.config import McpServer, save_servers, secret_name
from app.tools.mcp.oauth import WiderSignIn
from tests.keys.test_endpoints import secret_service
from tests.oauth_shapes import ADMIN, SCOPE, Shapes, key_pair
from tests.tools.mcp.test_mcp_config import _files_hold
from tests.tools.mcp.test_mcp_oauth import browse, keyring

__all__ = ["keyring", "secret_service"]
SECRET = "issued-by-the-owner-9f8e7d6c5b4a"


def _page(qtbot: Any, tmp_path: Path, keyring: Secrets) -> Any:
    from tests.ui.test_window import make_window

    window, _ = make_window(qtbot, tmp_path, [])
    window.mcp._secrets = window.mcp.pool._secrets = keyring
    window.mcp.opener = browse
    page = window.show_mcp()
    qtbot.addWidget(page)
    return window, page


@pytest.mark.parametrize(("auth", "method"), [("post", "client_secret_post"), ("private_key_jwt", "private_key_jwt")])
def test_a_pre_registered_client_is_given_on_the_page_and_signs_in(
    qtbot: Any, qloop: Any, keyring: Secrets, tmp_path: Path, auth: str, method: str
) -> None:
    closed = Shapes(registration=False)
    private, public = key_pair("ec")
    closed.grants.add_client("desk", method, secret=SECRET if auth == "post" else "", key=public)
    keyfile = tmp_path / "desk.pem"
    keyfile.write_text(private)
    try:
        window, page = _page(qtbot, tmp_path, keyring)
        qtbot.waitUntil(lambda: page.name.hasFocus() or page.servers.count() == 0, timeout=10_000)
        name = f"pre-{auth.replace('_', '-')}"  # the Secret Service lives for the whole session
        page.name.setText(name)
        page.where.setText(closed.url)
        assert not page.client_box.isVisible()
        page.oauth.setChecked(True)
        assert page.client_box.isVisible()
        box = page.client_box
        box.client_id.setText("desk")
        box.token_auth.setCurrentIndex(box.token_auth.findData(auth))
        assert box.secret.isEnabled() == (auth == "post") and box.key_path.isEnabled() == (auth != "post")
        (box.secret if auth == "post" else box.key_path).setText(SECRET if auth == "post" else str(keyfile))
        page.save_button.click()
        qtbot.waitUntil(lambda: page.status.text() == f"{name} saved.", timeout=10_000)
        assert box.secret.text() == "" and box.key_path.text() == ""  # gone from the page
        saved = json.loads((tmp_path / "config" / "mcp.json").read_text())["mcpServers"][name]
        assert saved["oauth_client"] == {"client_id": "desk", "token_auth": auth}
        entry = "oauth-client-secret" if auth == "post" else "oauth-private-key"
        assert (keyring.get(secret_name(name, entry)) or "").strip() == (SECRET if auth == "post" else private.strip())
        qtbot.waitUntil(lambda: page.sign_row.state.text() == "Not signed in", timeout=10_000)
        assert box.client_id.text() == "desk" and box.token_auth.currentData() == auth  # shown back
        page.sign_row.sign_in_button.click()
        qtbot.waitUntil(lambda: page.sign_row.state.text().startswith("Signed in"), timeout=30_000)
        assert page.sign_row.state.text() == f"Signed in (scopes: {SCOPE})", page.problem_banner.text()
        assert closed.grants.authenticated == [(method, "authorization_code")] and closed.grants.clients == {}
        page.test_button.click()
        qtbot.waitUntil(lambda: page.tools.count() == 2 or page.problem_banner.isVisible(), timeout=30_000)
        assert page.tools.count() == 2, page.problem_banner.text()
        window.mcp.pool.close()
        for held in (SECRET, private.splitlines()[1], *closed.grants.issued):
            assert _files_hold(tmp_path / "config", held) == [] and _files_hold(tmp_path / "data", held) == []
    finally:
        closed.close()


def test_a_step_up_met_in_a_call_is_agreed_to_with_the_pages_sign_in(
    qtbot: Any, qloop: Any, keyring: Secrets, tmp_path: Path
) -> None:
    wide = f"{SCOPE} {ADMIN}"
    step_up = Shapes(wider={"admin": ADMIN})
    try:
        save_servers({"ops": McpServer(url=step_up.url, oauth=True)})
        window, page = _page(qtbot, tmp_path, keyring)
        qtbot.waitUntil(lambda: page.sign_row.state.text() == "Not signed in", timeout=10_000)
        page.sign_row.sign_in_button.click()
        qtbot.waitUntil(lambda: page.sign_row.state.text() == f"Signed in (scopes: {SCOPE})", timeout=30_000)
        with pytest.raises(McpError) as refused:  # a chat's call of the tool, through the window's pool
            window.mcp.pool.connection("ops").call("admin", {}, timeout=15)
        assert isinstance(refused.value.sign_in, WiderSignIn)
        page.show_server("ops")  # the page, opened again, reads the sign-in
        qtbot.waitUntil(lambda: page.sign_row.state.text() == f"Wider sign-in asked (scopes: {wide})", timeout=10_000)
        assert page.sign_row.sign_in_button.isEnabled() and page.sign_row.sign_out_button.isEnabled()
        page.sign_row.sign_in_button.click()  # the person agrees
        qtbot.waitUntil(lambda: page.sign_row.state.text() == f"Signed in (scopes: {wide})", timeout=30_000)
        assert page.status.text().startswith("Signed in to ops")
        called = window.mcp.pool.connection("ops").call("admin", {}, timeout=15)
        assert called.content[0].text == "admin done"
        assert step_up.grants.grants == ["authorization_code", "authorization_code"]
        window.mcp.pool.close()
    finally:
        step_up.close()
