"""MCP Apps at the connection, against a real SDK server (tests/fixtures/mcp_apps_server.py):
the window's hooks declare the `io.modelcontextprotocol/ui` extension (the app type it renders)
when Qt WebEngine is there, a host without them declares nothing, and a tool a server keeps for
its views (`visibility: ["app"]`) is never offered to the model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from app.secrets import Secrets
from app.tools.mcp.apps import APP_MIME, EXTENSION, extension
from app.tools.mcp.config import McpServer
from app.tools.mcp.hooks import McpHooks
from app.tools.mcp.tools import McpPool
from tests.keys.test_endpoints import secret_service

__all__ = ["secret_service"]

SERVER = str(Path(__file__).resolve().parents[2] / "fixtures" / "mcp_apps_server.py")


def _declared(hooks: McpHooks) -> tuple[dict[str, object], list[str]]:
    server = McpServer(command=sys.executable, args=(SERVER, "--name", "declared"))
    pool = McpPool(lambda: {"apps": server}, Secrets(), hooks)
    try:
        said = pool.connection("apps").call("declared", {}, timeout=30)
        offered = [own for own, _tool in pool.offered("apps")]
        return json.loads(said.content[0].text), offered
    finally:
        pool.close()


def test_a_host_that_renders_views_declares_the_extension_and_the_app_s_own_tool_stays_hidden() -> None:
    declared, offered = _declared(McpHooks(extensions=extension(True)))
    assert declared == {EXTENSION: {"mimeTypes": [APP_MIME]}}
    assert "add" in offered and "refresh" not in offered  # refresh: visibility ["app"]


def test_a_host_that_cannot_render_declares_nothing() -> None:
    assert extension(False) == {}
    declared, _ = _declared(McpHooks())
    assert declared == {}


def test_the_window_declares_the_extension_when_qt_webengine_is_installed(qapp: object) -> None:
    from app.controllers.mcp_asks import WindowAsks
    from app.ui import mcp_apps

    hooks = WindowAsks().hooks(lambda: McpPool(dict, Secrets()))
    assert mcp_apps.available()  # the test install has it (the `apps` extra is in `test`)
    assert dict(hooks.extensions) == extension(True)


def test_the_terminal_shows_an_app_tools_text_result(
    secret_service: dict[str, str], tmp_path: Path
) -> None:
    """`harmony-desk mcp` on the npm MCP Apps example: its tool with a view answers with its
    text (the terminal's fallback): the server's time."""
    import re

    from tests.keys.test_endpoints import cli
    from tests.npm_servers import command
    from tests.tools.mcp.test_mcp_config import _env

    env = _env(tmp_path, secret_service)
    added = cli(["mcp", "add", "basic", "--", *command("mcp-server-basic-vanillajs"), "--stdio"], env)
    assert added.returncode == 0, added.stderr
    tools = {t["name"]: t for t in map(json.loads, cli(["mcp", "tools", "basic"], env).stdout.splitlines())}
    assert "get-time" in tools
    called = cli(["mcp", "call", "basic", "get-time", "{}"], env)
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    assert result["ok"] and re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", json.dumps(result["content"]))
