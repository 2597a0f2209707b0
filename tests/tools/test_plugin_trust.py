"""Plugins the user trusts: nothing is imported before the user says so, a changed file asks
again, and a plugin that exits, blocks or crashes cannot take the app down."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.tools.discovery import discover
from app.tools.trust import TrustStore

PLUGIN = (
    "from pathlib import Path\n"
    "Path({marker!r}).write_text('imported')\n"
    "from app.tools.api import hookimpl, tool\n"
    "@tool\ndef ping(text: str) -> str:\n    '''Echo.'''\n    return 'pong ' + text\n"
    "@tool\ndef die(code: int) -> str:\n    '''Ends the process it runs in.'''\n"
    "    import os\n    os._exit(code)\n"
    "@hookimpl\ndef harmony_desk_tools():\n    return [ping, die]\n"
)


@pytest.fixture
def store(tmp_path: Path) -> TrustStore:
    return TrustStore(tmp_path / "trust.json")


def test_a_new_plugin_is_pending_and_never_imported(tmp_path: Path, store: TrustStore) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    marker = tmp_path / "marker"
    (folder / "echo.py").write_text(PLUGIN.format(marker=str(marker)))
    found = discover(folders=[folder], trust=store)
    assert "echo" in found.pending and "echo" not in found.tools and not marker.exists()
    identity = found.pending["echo"]
    assert identity.path == str(folder / "echo.py") and len(identity.sha256) == 64
    assert store.status(identity) == "new"
    store.trust(identity)
    assert oct(store.path.stat().st_mode & 0o777) == "0o600"
    found = discover(folders=[folder], trust=store)
    try:
        assert [t.name for t in found.tools["echo"]] == ["ping", "die"] and marker.exists()
        assert found.tools["echo"][0].function(text="x") == "pong x"
        assert found.host is not None and found.host.pid != os.getpid()  # imported elsewhere
    finally:
        found.close()
    # A changed file asks again, and is not imported until it is trusted again.
    marker.unlink()
    (folder / "echo.py").write_text(PLUGIN.format(marker=str(marker)) + "# changed\n")
    again = discover(folders=[folder], trust=store)
    assert "echo" in again.pending and store.status(again.pending["echo"]) == "changed"
    assert not marker.exists()


@pytest.mark.parametrize(
    "body, words",
    [
        ("raise SystemExit(3)", "SystemExit"),
        ("import os\nos._exit(9)", "exit status 9"),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)", "exit status -11"),
        ("import time\ntime.sleep(3600)", "did not finish within"),
    ],
)
def test_a_plugin_that_exits_blocks_or_crashes_is_skipped(
    tmp_path: Path, store: TrustStore, body: str, words: str
) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "aaa_bad.py").write_text(body + "\n")
    (folder / "zzz_good.py").write_text(PLUGIN.format(marker=str(tmp_path / "m")))
    for identity in discover(folders=[folder], trust=store).pending.values():
        store.trust(identity)
    from app.tools import plugin_host, plugin_load

    found_host = plugin_host.PluginHost(import_seconds=3)
    specs = [
        plugin_load.PluginSpec(i.name, i.kind, i.path, "") for i in store.load().values()
    ]
    tools, failures = found_host.load(sorted(specs, key=lambda s: s.name))
    try:
        assert words in failures["aaa_bad"]
        assert [t.name for t in tools["zzz_good"]] == ["ping", "die"]
        assert tools["zzz_good"][0].function(text="still here") == "pong still here"
    finally:
        found_host.close()


def test_a_tool_that_kills_its_host_is_an_error_and_the_host_comes_back(
    tmp_path: Path, store: TrustStore
) -> None:
    from app.tools.api import ToolError

    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "echo.py").write_text(PLUGIN.format(marker=str(tmp_path / "m")))
    for identity in discover(folders=[folder], trust=store).pending.values():
        store.trust(identity)
    found = discover(folders=[folder], trust=store)
    try:
        ping, die = found.tools["echo"]
        with pytest.raises(ToolError, match="plugin host stopped"):
            die.function(code=5)
        assert ping.function(text="again") == "pong again"
    finally:
        found.close()


def test_tools_plugins_and_tools_call_commands(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "echo.py").write_text(PLUGIN.format(marker=str(tmp_path / "marker")))
    env = {**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path / "config"),
           "HARMONY_DESK_PLUGINS": str(folder)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "app", "tools", *args], env=env,
                              capture_output=True, text=True, timeout=600)

    listed = cli("plugins")
    assert listed.returncode == 0 and "echo" in listed.stdout and " new " in listed.stdout
    refused = cli("call", "functions.ping", '{"text": "hi"}')
    assert refused.returncode == 2 and "no tool or plugin called functions.ping" in refused.stderr
    assert not (tmp_path / "marker").exists()
    assert cli("plugins", "--trust", "echo").returncode == 0
    ran = cli("call", "functions.ping", '{"text": "hi"}')
    assert ran.returncode == 0 and json.loads(ran.stdout) == {"ok": True, "content": "pong hi"}
    python = cli("call", "python", '{"code": "import socket; socket.socket()"}')
    assert python.returncode == 1
    assert json.loads(python.stdout)["error"]["message"].endswith("Not supported")
    assert cli("call", "python", "[1]").returncode == 2
