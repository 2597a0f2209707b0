"""MCP server configuration: `mcp.json` in the `mcpServers` shape, the CLI that writes it, and
imports from other apps' files — every secret in a real Secret Service (gnome-keyring on a
private D-Bus session), none in any file the app writes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.errors import InvalidInputError
from app.secrets import Secrets
from app.tools.mcp.config import McpServer, import_servers, load_servers, secret_name
from tests.keys.test_endpoints import cli, secret_service, secret_service_backend

__all__ = ["secret_service"]  # the fixture, shared
TOKEN = "ghp_" + "x7Q2" * 9  # a made-up token that must never reach a file


def _env(tmp_path: Path, secret_service: dict[str, str]) -> dict[str, str]:
    return {**os.environ, **secret_service, "HARMONY_DESK_CONFIG": str(tmp_path / "config"),
            "HARMONY_DESK_DATA": str(tmp_path / "data"), "HARMONY_DESK_CACHE": str(tmp_path / "cache")}


def _files_hold(tmp_path: Path, secret: str) -> list[str]:
    return [str(p) for p in tmp_path.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_the_cli_adds_lists_and_removes_servers_with_secrets_in_the_keyring(
    secret_service: dict[str, str], tmp_path: Path
) -> None:
    env = _env(tmp_path, secret_service)
    local = cli(["mcp", "add", "time", "--env", "TZ=UTC", "--secret-env", "API_TOKEN", "--",
                 "mcp-server-time", "--local-timezone", "UTC"], env, stdin=TOKEN + "\n")
    assert local.returncode == 0, local.stderr
    remote = cli(["mcp", "add", "docs", "--url", "https://mcp.example.invalid/mcp",
                  "--secret-header", "Authorization"], env, stdin=f"Bearer {TOKEN}\n")
    assert remote.returncode == 0, remote.stderr
    listed = [json.loads(line) for line in cli(["mcp", "list"], env).stdout.splitlines()]
    assert [s["name"] for s in listed] == ["time", "docs"] or [s["name"] for s in listed] == ["docs", "time"]
    time = next(s for s in listed if s["name"] == "time")
    assert time["command"] == "mcp-server-time" and time["args"] == ["--local-timezone", "UTC"]
    assert time["env"] == {"TZ": "UTC"} and time["secret_env"] == ["API_TOKEN"]
    keyring = Secrets(secret_service_backend())
    assert keyring.get(secret_name("time", "API_TOKEN")) == TOKEN
    assert keyring.get(secret_name("docs", "Authorization")) == f"Bearer {TOKEN}"
    assert _files_hold(tmp_path, TOKEN) == []  # the keyring only
    mode = (tmp_path / "config" / "mcp.json").stat().st_mode & 0o777
    assert mode == 0o600
    assert cli(["mcp", "remove", "time"], env).returncode == 0
    assert keyring.get(secret_name("time", "API_TOKEN")) is None  # its secrets go with it
    assert [json.loads(line)["name"] for line in cli(["mcp", "list"], env).stdout.splitlines()] == ["docs"]


@pytest.mark.parametrize("args, says", [
    (["mcp", "add", "bad name", "--", "x"], "not a server name"),
    (["mcp", "add", "both", "--url", "https://a.invalid", "--", "x"], "either a command"),
    (["mcp", "add", "neither"], "either a command"),
    (["mcp", "add", "ftp", "--url", "ftp://a.invalid"], "http"),
    (["mcp", "add", "env", "--env", "NOEQUALS", "--", "x"], "KEY=VALUE"),
])
def test_bad_servers_are_refused_with_why(tmp_path: Path, args: list[str], says: str) -> None:
    env = {**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path / "config")}
    done = cli(args, env)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert not (tmp_path / "config" / "mcp.json").exists()


def test_imports_from_other_apps_move_what_looks_secret_to_the_keyring(
    secret_service: dict[str, str], tmp_path: Path
) -> None:
    claude = {"mcpServers": {
        "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                   "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": TOKEN, "LOG_LEVEL": "info"}},
        "remote docs": {"url": "https://mcp.example.invalid/mcp", "headers": {"Authorization": f"Bearer {TOKEN}"}},
        "broken": {"args": ["no command"]},
    }}
    vscode = {"inputs": [{"id": "key", "type": "promptString", "password": True}],
              "servers": {"time": {"type": "stdio", "command": "mcp-server-time", "env": {"KEY": "${input:key}"}}}}
    keyring = Secrets(secret_service_backend())
    (tmp_path / "claude.json").write_text(json.dumps(claude))
    found = import_servers(tmp_path / "claude.json", keyring)
    assert sorted(found.servers) == ["github", "remote-docs"]
    github = found.servers["github"]
    assert github.env == {"LOG_LEVEL": "info"} and github.secret_env == ("GITHUB_PERSONAL_ACCESS_TOKEN",)
    assert keyring.get(secret_name("github", "GITHUB_PERSONAL_ACCESS_TOKEN")) == TOKEN
    assert found.servers["remote-docs"].secret_headers == ("Authorization",)
    assert "github: GITHUB_PERSONAL_ACCESS_TOKEN" in found.moved and any("broken" in s for s in found.skipped)
    (tmp_path / "mcp.json").write_text(json.dumps(vscode))
    code = import_servers(tmp_path / "mcp.json", keyring)
    assert code.servers["time"].secret_env == ("KEY",) and "asked by VS Code" in code.moved[0]
    env = _env(tmp_path, secret_service)
    done = cli(["mcp", "import", str(tmp_path / "claude.json")], env)
    assert done.returncode == 0 and "moved to the keyring: github: GITHUB_PERSONAL_ACCESS_TOKEN" in done.stderr
    (tmp_path / "claude.json").unlink()  # the user's own file held it; ours never do
    assert _files_hold(tmp_path, TOKEN) == []


def test_a_damaged_mcp_json_names_the_server_and_the_field(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"time": {"command": "x", "colour": "blue"}}}))
    with pytest.raises(InvalidInputError, match=r"time\.colour"):
        load_servers(path)
    path.write_text("{not json")
    with pytest.raises(InvalidInputError, match="not JSON"):
        load_servers(path)
    assert McpServer(command="x").remote is False and McpServer(url="http://127.0.0.1:1/mcp").remote
