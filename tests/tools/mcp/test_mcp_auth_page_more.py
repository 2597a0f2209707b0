"""The window's MCP page (offscreen) against real servers in three more authorization shapes
(`tests/oauth_shapes.py`), each added, signed in and used through the page as a person would:
a server that lets `initialize` through and protects `tools/list` (its Test says it needs a
sign-in; Sign in follows the 401), a Client ID Metadata Document typed into the page's OAuth
client box and used as the client id (served over TLS on loopback), and client credentials
that sign in with no browser and no person — tokens and secrets in a real Secret Service (a
private D-Bus session), in no file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.paths import config_dir
from app.secrets import Secrets
from app.tools.mcp.config import secret_name
from tests.keys.test_endpoints import secret_service
from tests.oauth_shapes import SCOPE, MetadataDocument, ShapeGrants, Shapes
from tests.tools.mcp.test_mcp_auth_page import _page
from tests.tools.mcp.test_mcp_config import _files_hold
from tests.tools.mcp.test_mcp_oauth import browse, keyring

__all__ = ["keyring", "secret_service"]
SECRET = "machine-secret-from-the-owner-5e4d3c2b1a"


def _add(qtbot: Any, page: Any, name: str, url: str, **client: str) -> dict[str, Any]:
    """Type a new OAuth server into the page (`client`: the client box's text fields), save it
    and wait until it is saved and its sign-in row shows; its saved configuration."""
    qtbot.waitUntil(lambda: page.name.hasFocus() or page.servers.count() == 0, timeout=10_000)
    page.name.setText(name)
    page.where.setText(url)
    page.oauth.setChecked(True)
    for field, text in client.items():
        getattr(page.client_box, field).setText(text)
    page.save_button.click()
    qtbot.waitUntil(lambda: page.status.text() == f"{name} saved.", timeout=10_000)
    qtbot.waitUntil(lambda: page.sign_row.state.text() == "Not signed in", timeout=10_000)
    assert page.sign_row.isVisible()
    config = json.loads((config_dir() / "mcp.json").read_text())
    return dict(config["mcpServers"][name])


def _test(qtbot: Any, page: Any) -> None:
    """Press Test connection and wait for its answer: the tools listed or a problem said."""
    page.status.setText("")
    page.problem_banner.hide()
    page.test_button.click()
    qtbot.waitUntil(
        lambda: page.status.text().endswith("tools.") or page.problem_banner.isVisible(),
        timeout=30_000,
    )


def _sign_in(qtbot: Any, page: Any) -> str:
    """Press Sign in and wait until it is signed in; what the page said while it signed in."""
    page.sign_row.sign_in_button.click()
    said = page.status.text()
    qtbot.waitUntil(
        lambda: page.status.text().startswith("Signed in to") or page.problem_banner.isVisible(),
        timeout=30_000,
    )
    assert page.sign_row.state.text() == f"Signed in (scopes: {SCOPE})", page.problem_banner.text()
    return str(said)


def _grants(shape: Shapes) -> ShapeGrants:
    """The shape's authorization server, as what it is."""
    assert isinstance(shape.grants, ShapeGrants)
    return shape.grants


def _call(window: Any, name: str, text: str) -> str:
    """A chat's call of the server's echo tool, through the window's pool."""
    called = window.mcp.pool.connection(name).call("echo", {"text": text}, timeout=15)
    return str(called.content[0].text)


def test_a_server_that_protects_tools_list_only_says_so_on_test_and_signs_in_on_the_page(
    qtbot: Any, qloop: Any, keyring: Secrets, tmp_path: Path
) -> None:
    lists_only = Shapes(protected={"tools/list", "tools/call"})
    try:
        window, page = _page(qtbot, tmp_path, keyring)
        _add(qtbot, page, "lists", lists_only.url)
        _test(qtbot, page)  # initialize is let through; tools/list answers 401
        said = page.problem_banner.text()
        assert page.problem_banner.isVisible() and page.tools.count() == 0, page.status.text()
        assert "sign in to lists first" in said and "works without" not in said, said
        assert page.sign_row.state.text() == "Not signed in"
        assert lists_only.grants.clients == {} and lists_only.grants.grants == []  # no sign-in yet
        assert _sign_in(qtbot, page) == "Signing in to lists in your browser…"
        assert page.status.text().startswith("Signed in to lists"), page.status.text()
        assert "works without" not in page.status.text()
        assert lists_only.grants.grants == ["authorization_code"]
        _test(qtbot, page)
        assert not page.problem_banner.isVisible(), page.problem_banner.text()
        listed = {page.tools.item(i).text() for i in range(page.tools.count())}
        assert listed == {"echo", "admin"} and page.status.text() == "lists answered: 2 tools."
        assert _call(window, "lists", "signed in") == "signed in"
        assert [m for m, _ in lists_only.guarded.seen][-2:] == ["tools/list", "tools/call"]
        window.mcp.pool.close()
        for held in lists_only.grants.issued:
            assert (
                _files_hold(tmp_path / "config", held) == []
                and _files_hold(tmp_path / "data", held) == []
            )
    finally:
        lists_only.close()


def test_a_client_metadata_url_given_on_the_page_is_the_client_id(
    qtbot: Any, qloop: Any, keyring: Secrets, tmp_path: Path
) -> None:
    document = MetadataDocument(tmp_path)
    takes = Shapes(cimd_ca=document.ca)  # registration is offered too: the URL is chosen
    authority = _grants(takes)
    opened: list[str] = []

    def approve(url: str) -> bool:
        opened.append(url)
        return browse(url)

    try:
        window, page = _page(qtbot, tmp_path, keyring)
        window.mcp.opener = approve
        saved = _add(qtbot, page, "by-url", takes.url, metadata_url=document.url)
        assert saved["oauth_client"] == {"metadata_url": document.url}
        assert page.client_box.metadata_url.text() == document.url  # shown back
        _sign_in(qtbot, page)
        assert authority.clients == {}  # no dynamic registration
        assert set(authority.fetched) == {document.url} and document.asked >= 1
        assert authority.authenticated == [("none", "authorization_code")]
        assert (
            len(opened) == 1
            and f"client_id={document.url.replace(':', '%3A').replace('/', '%2F')}" in opened[0]
        )
        granted = {token.client_id for token, _ in authority.access.values()}
        assert granted == {document.url}  # the authorization server's side: the URL is the client
        _test(qtbot, page)
        assert page.tools.count() == 2, page.problem_banner.text()
        assert _call(window, "by-url", "by url") == "by url"
        window.mcp.pool.close()
    finally:
        takes.close()
        document.close()


@pytest.mark.parametrize(
    ("auth", "method"), [("basic", "client_secret_basic"), ("post", "client_secret_post")]
)
def test_client_credentials_given_on_the_page_need_no_browser(
    qtbot: Any, qloop: Any, keyring: Secrets, tmp_path: Path, auth: str, method: str
) -> None:
    machine = Shapes(client_credentials=True)
    authority = _grants(machine)
    authority.add_client("robot", method, secret=SECRET)
    opened: list[str] = []
    try:
        window, page = _page(qtbot, tmp_path, keyring)
        window.mcp.opener = opened.append  # a browser step would be recorded here
        box = page.client_box
        page.oauth.setChecked(True)
        box.token_auth.setCurrentIndex(box.token_auth.findData(auth))
        box.machine.setChecked(True)
        assert box.secret.isEnabled() and not box.key_path.isEnabled()
        name = f"bot-{auth}"  # the Secret Service lives for the whole module
        saved = _add(
            qtbot, page, name, machine.url, client_id="robot", secret=SECRET, issuer=machine.issuer
        )
        assert saved["oauth_client"] == {"client_id": "robot", "token_auth": auth,
                                         "grant": "client_credentials", "issuer": machine.issuer}  # fmt: skip
        assert box.secret.text() == "" and box.machine.isChecked()  # the secret gone from the page
        assert keyring.get(secret_name(name, "oauth-client-secret")) == SECRET
        _test(qtbot, page)  # its first use signs in by itself
        assert page.tools.count() == 2, page.problem_banner.text()
        assert authority.grants == ["client_credentials"]
        assert authority.authenticated == [(method, "client_credentials")]
        page.show_server(name)  # the page, read again, shows the sign-in
        qtbot.waitUntil(
            lambda: page.sign_row.state.text() == f"Signed in (scopes: {SCOPE})", timeout=10_000
        )
        assert _call(window, name, "machine") == "machine"
        said = _sign_in(qtbot, page)  # Sign in on the page: again no browser, no person
        assert said == f"Signing in to {name} with its client credentials…"
        assert page.status.text().startswith(f"Signed in to {name}"), page.status.text()
        assert opened == []  # no browser step, in the use nor in the sign-in
        assert authority.grants == ["client_credentials"] * 2
        window.mcp.pool.close()
        for held in (SECRET, *authority.issued):
            assert (
                _files_hold(tmp_path / "config", held) == []
                and _files_hold(tmp_path / "data", held) == []
            )
    finally:
        machine.close()
