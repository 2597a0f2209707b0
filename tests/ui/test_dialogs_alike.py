"""The Endpoints and MCP dialogs behave alike (review L6), offscreen on real widgets: Test
connection works before Save in File ▸ MCP servers… as in the Endpoints dialog — a real SDK
server, with a secret typed in the form and used for that start only —, an edit is tested as
typed, the KEY=VALUE boxes show what a line looks like, and the endpoint test's sentence is
never clipped."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QPlainTextEdit

from app.controllers.remote_host import RemoteHost
from app.secrets import Secrets
from app.tools.mcp.config import secret_name
from app.ui.window.endpoints import EndpointDialog
from tests.keys.test_endpoints import secret_service, secret_service_backend
from tests.tools.mcp.mcp_page import config, mcp_page
from tests.tools.mcp.test_mcp_config import TOKEN, _files_hold
from tests.tools.mcp.test_mcp_host import ENV_SERVER

__all__ = ["config", "secret_service"]


def _tested(qtbot: Any, page: Any) -> None:
    page.test_button.click()
    qtbot.waitUntil(
        lambda: "answered" in page.status.text() or page.problem_banner.isVisible(), timeout=30_000
    )


def test_an_unsaved_server_is_tested_with_its_typed_secret_and_nothing_is_stored(
    qtbot: Any, qloop: Any, tmp_path: Path, config: Path, secret_service: dict[str, str]
) -> None:
    keyring = Secrets(secret_service_backend())
    window, page = mcp_page(qtbot, tmp_path, keyring)
    page.name.setText("envy")
    page.where.setText(f"{sys.executable} {ENV_SERVER}")
    page.secrets.setPlainText(f"API_TOKEN={TOKEN}")  # needed to start: typed, not saved
    _tested(qtbot, page)
    assert not page.problem_banner.isVisible(), (
        page.problem_banner.text(),
        page.problem_banner.details(),
    )
    names = {page.tools.item(i).text() for i in range(page.tools.count())}
    assert {"secret", "slow", "square"} <= names and "tokens to each prompt" in page.offers.text()
    assert page.servers.count() == 0 and not (config / "mcp.json").exists()  # still unsaved
    assert (
        keyring.get(secret_name("envy", "API_TOKEN")) is None and _files_hold(tmp_path, TOKEN) == []
    )
    assert "envy" not in window.mcp.pool.configured()  # the app's own pool never saw it
    page.save_button.click()  # what the test listed is what is saved
    qtbot.waitUntil(lambda: page.servers.count() == 1, timeout=10_000)
    assert keyring.get(secret_name("envy", "API_TOKEN")) == TOKEN


def test_an_edit_is_tested_as_typed_and_a_broken_one_says_why(
    qtbot: Any, qloop: Any, tmp_path: Path, config: Path
) -> None:
    window, page = mcp_page(qtbot, tmp_path)
    page.name.setText("envy")
    page.where.setText(f"{sys.executable} {ENV_SERVER}")
    page.save_button.click()
    qtbot.waitUntil(lambda: page.servers.count() == 1, timeout=10_000)
    page.where.setText(f"{sys.executable} {config / 'no-such-server.py'}")  # edited, not saved
    _tested(qtbot, page)
    assert page.problem_banner.isVisible() and "could not start" in page.problem_banner.text()
    saved = json.loads((config / "mcp.json").read_text())["mcpServers"]["envy"]
    assert saved["args"] == [ENV_SERVER]  # the saved one is as it was
    page.show_server("envy")  # back to the saved form: its test is the saved server's
    _tested(qtbot, page)
    assert "envy answered" in page.status.text() and "envy" in window.mcp.probes


def test_the_key_value_boxes_show_what_a_line_looks_like(
    qtbot: Any, qloop: Any, tmp_path: Path, config: Path
) -> None:
    _, page = mcp_page(qtbot, tmp_path)
    for box in (page.env, page.secrets, page.headers):
        assert isinstance(box, QPlainTextEdit) and "=" in box.placeholderText(), (
            box.accessibleName()
        )


def test_the_endpoint_test_sentence_is_never_clipped(qtbot: Any) -> None:
    dialog = EndpointDialog(RemoteHost())
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    long = (
        "Could not reach http://127.0.0.1:9/v1: the connection was refused (nothing listens"
        " there). Check the base URL, that the server runs and that no proxy stands between. "
    ) * 2
    dialog.remote.tested.emit(False, long)
    label = dialog.result_label
    qtbot.waitUntil(lambda: label.height() >= label.heightForWidth(label.width()), timeout=3000)
    assert label.text().startswith("✗ Could not reach") and label.isVisible()
    bottom = label.mapTo(dialog, label.rect().bottomLeft()).y()
    assert bottom <= dialog.height()  # the dialog grew to hold all of it
