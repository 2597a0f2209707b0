"""`python` in an MCP server's command is the app's own interpreter (review M3): the documented
`python -m mcp_server_time` starts the real server from PyPI even where the `PATH`'s first
`python` lacks it; a Python that lacks a module is named in the error, with how to fix it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from app.tools.mcp.client import McpConnection, McpError
from app.tools.mcp.config import McpServer
from tests.keys.test_endpoints import cli


def _bare_python(folder: Path) -> Path:
    """A real Python on `folder` named `python`, without the app's packages (no site folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "python"
    program.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    program.chmod(0o755)
    return program


@pytest.fixture
def other_python_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The `PATH`'s first `python` is one without `mcp_server_time` (as a system Python is)."""
    program = _bare_python(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{program.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return program


@pytest.mark.skipif(sys.platform == "win32", reason="the stand-in Python is a shell script")
def test_the_documented_python_command_runs_the_apps_own_python(other_python_first: Path) -> None:
    server = McpServer(command="python", args=("-m", "mcp_server_time", "--local-timezone", "UTC"))
    connection = McpConnection("time", server).start()
    try:
        names = {tool.name for tool in connection.tools()}
    finally:
        connection.close()
    assert {"get_current_time", "convert_time"} <= names


@pytest.mark.skipif(sys.platform == "win32", reason="the stand-in Python is a shell script")
def test_a_python_without_the_module_is_named_with_the_fix(other_python_first: Path) -> None:
    server = McpServer(command=str(other_python_first), args=("-m", "mcp_server_time"))
    with pytest.raises(McpError) as failed:
        McpConnection("time", server).start()
    assert "could not start: it exited with code 1 before answering" in failed.value.message
    details = failed.value.details
    assert f"The Python that ran it is {other_python_first}, not the app's own" in details
    assert "no module “mcp_server_time”" in details and f"`{other_python_first} -m pip install" in details
    assert sys.executable in details  # the app's own, which `python` would have run


def test_the_apps_own_python_lacking_a_module_says_so() -> None:
    server = McpServer(command="python", args=("-m", "no_such_server_module"))
    with pytest.raises(McpError) as failed:
        McpConnection("absent", server).start()
    details = failed.value.details
    assert f"The Python that ran it is the app's own ({sys.executable})" in details
    assert "no module “no_such_server_module”" in details


@pytest.mark.skipif(sys.platform == "win32", reason="the stand-in Python is a shell script")
def test_the_cli_example_of_the_docs_works_as_written(tmp_path: Path) -> None:
    program = _bare_python(tmp_path / "bin")
    env = {**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path / "config"),
           "PATH": f"{program.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    docs = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    assert "harmony-desk mcp add time -- python -m mcp_server_time" in docs
    assert cli(["mcp", "add", "time", "--", "python", "-m", "mcp_server_time"], env).returncode == 0
    listed = cli(["mcp", "tools", "time"], env)
    assert listed.returncode == 0, listed.stderr
    names = {json.loads(line)["name"] for line in listed.stdout.splitlines()}
    assert "get_current_time" in names
