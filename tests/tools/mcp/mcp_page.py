"""The window's File ▸ MCP servers… page opened as a test needs it: the app's configuration in the
test's own folder, and the page shown with its saved servers read.

Guarantees: `config` points `HARMONY_DESK_CONFIG` at `tmp_path / "config"` for the test only
(import it into a test module and name it in `__all__`); `mcp_page` opens a real window with no
scripted answers, gives its MCP host and pool `keyring` when one is passed (never the user's
own keyring), shows the page, and returns once the page has read its configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.secrets import Secrets
from app.ui.window.main_window import MainWindow
from tests.ui.test_window import make_window


@pytest.fixture()
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    return tmp_path / "config"


def mcp_page(qtbot: Any, tmp_path: Path, keyring: Secrets | None = None) -> tuple[MainWindow, Any]:
    """A window and its MCP servers page, shown and loaded."""
    window, _ = make_window(qtbot, tmp_path, [])
    if keyring is not None:
        window.mcp._secrets = window.mcp.pool._secrets = keyring
    page = window.show_mcp()
    qtbot.addWidget(page)
    qtbot.waitUntil(lambda: hasattr(page, "_config"), timeout=5000)
    return window, page
