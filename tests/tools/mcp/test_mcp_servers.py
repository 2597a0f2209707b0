"""MCP servers run for real over stdio: `mcp-server-time` from PyPI (written by others), and a
server built here with the SDK's own server API — listed, called, failing, slow, too big, and
started with a secret read from a real keyring."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from app.tools.mcp.client import McpConnection, McpError
from app.tools.mcp.config import McpServer
from app.tools.mcp.results import envelope
from tests.keys.test_endpoints import cli, secret_service
from tests.tools.mcp.test_mcp_config import TOKEN, _env, _files_hold

__all__ = ["secret_service"]
TIME = str(Path(sys.executable).parent / "mcp-server-time")
HERE = Path(__file__).resolve().parents[2] / "fixtures" / "mcp_env_server.py"


def test_the_cli_lists_and_calls_a_real_server(secret_service: dict[str, str], tmp_path: Path) -> None:
    env = _env(tmp_path, secret_service)
    assert cli(["mcp", "add", "time", "--", TIME, "--local-timezone", "UTC"], env).returncode == 0
    tools = [json.loads(line) for line in cli(["mcp", "tools", "time"], env).stdout.splitlines()]
    names = {t["name"]: t for t in tools}
    assert {"get_current_time", "convert_time"} <= set(names)
    assert "timezone" in names["get_current_time"]["input_schema"]["properties"]
    called = cli(["mcp", "call", "time", "get_current_time", '{"timezone": "Europe/Oslo"}'], env)
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    assert result["ok"] and '"timezone": "Europe/Oslo"' in json.dumps(result["content"]).replace("\\\"", '"')
    failed = cli(["mcp", "call", "time", "get_current_time", '{"timezone": "Nowhere/Atlantis"}'], env)
    said = json.loads(failed.stdout)
    assert failed.returncode == 1 and not said["ok"] and said["error"]["code"] == "E-TOOL-ERROR"
    assert "Nowhere/Atlantis" in said["error"]["message"]
    bad = cli(["mcp", "call", "time", "get_current_time", "{not json"], env)
    assert bad.returncode == 2 and "not JSON" in bad.stderr


def test_a_server_that_cannot_start_says_why(tmp_path: Path) -> None:
    env = {**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path / "config")}
    assert cli(["mcp", "add", "gone", "--", str(tmp_path / "no-such-server")], env).returncode == 0
    done = cli(["mcp", "tools", "gone"], env)
    assert done.returncode == 2 and "The MCP server “gone” could not start: the command" in done.stderr, done.stderr
    crashing = cli(["mcp", "add", "crash", "--", sys.executable, "-c", "import sys; sys.stderr.write('no config found'); sys.exit(3)"], env)
    assert crashing.returncode == 0
    done = cli(["mcp", "tools", "crash"], env)
    assert done.returncode == 2 and "“crash” could not start: it exited with code 3 before answering." in done.stderr
    assert "no config found" in done.stderr  # its stderr: the details, printed under the sentence


def test_the_secret_reaches_the_server_from_the_keyring_and_no_file(secret_service: dict[str, str], tmp_path: Path) -> None:
    env = _env(tmp_path, secret_service)
    added = cli(["mcp", "add", "envy", "--secret-env", "API_TOKEN", "--", sys.executable, str(HERE)],
                env, stdin=TOKEN + "\n")
    assert added.returncode == 0, added.stderr
    called = cli(["mcp", "call", "envy", "secret", '{"name": "API_TOKEN"}'], env)
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["content"] in (f"{len(TOKEN)} characters, ending {TOKEN[-4:]!r}",
                                                     {"result": f"{len(TOKEN)} characters, ending {TOKEN[-4:]!r}"})
    assert _files_hold(tmp_path, TOKEN) == []


def test_a_slow_tool_hits_its_deadline_and_a_big_result_is_cut_visibly() -> None:
    connection = McpConnection("envy", McpServer(command=sys.executable, args=(str(HERE),))).start()
    try:
        try:
            connection.call("slow", {"seconds": 30}, timeout=1.0)
            raise AssertionError("the deadline did not hold")
        except McpError as exc:
            assert exc.code.value == "E-TOOL-TIMEOUT" and "within 1 s" in exc.message
        limit = 20_000  # past what a result is kept whole (MAX_RESULT_CHARS), as here past this
        result: Any = envelope(connection.call("big", {"characters": limit + 500}, timeout=30), limit)
        text = json.dumps(result["content"])
        assert result["ok"] and "[cut: 500 more characters]" in text
    finally:
        connection.close()
