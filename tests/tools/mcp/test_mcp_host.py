"""MCP servers as a conversation's tools, run for real: `mcp-server-time` and `mcp-server-git`
from PyPI over stdio (written by others), servers built here with the SDK's own server API over
stdio, Streamable HTTP and SSE on loopback — namespaced into Harmony functions, approved,
audited, cancelled, timed out unless they report progress, restarted after a crash, and never
left running after the app is killed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.constrain.constraint import enforceable
from app.domain.events import ToolsRan, TurnResult
from app.engine.local.scripted import ScriptedClient
from app.engine.local.session import ChatSession
from app.harmony.renderer import tool_tokens
from app.secrets import Secrets
from app.templates.harmony_grammar import harmony_constraint
from app.templates.registry import get_template
from app.tools.audit import AuditLog
from app.tools.discovery import discover
from app.tools.mcp.client import McpError
from app.tools.mcp.config import McpServer
from app.tools.mcp.env import login_path, merged_path
from app.tools.mcp.tools import McpPool, function_name
from app.tools.session import ConversationTools, ToolOptions, UnknownToolError
from tests.keys.test_endpoints import cli, secret_service, secret_service_backend
from tests.tools.mcp.test_mcp_config import TOKEN, _env, _files_hold
from tests.turns import tool_turn

__all__ = ["secret_service"]
BIN = Path(sys.executable).parent
TIME = str(BIN / "mcp-server-time")
GIT = str(BIN / "mcp-server-git")
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ENV_SERVER = str(FIXTURES / "mcp_env_server.py")
HTTP_SERVER = str(FIXTURES / "mcp_http_server.py")


def _pool(**servers: McpServer) -> McpPool:
    return McpPool(lambda: dict(servers), Secrets())


def _tools(pool: McpPool, *names: str, offline: bool = False) -> ConversationTools:
    options = ToolOptions(enabled=tuple(f"mcp:{n}" for n in names), offline=offline)
    return ConversationTools(options, discover(entry_points=False), pool)


def _processes(marker: str) -> list[int]:
    """The processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry.name))
    return found


def test_names_are_namespaced_per_server_and_the_grammar_takes_them() -> None:
    assert function_name("time", "get_current_time") == "time__get_current_time"
    assert function_name("my-clock", "get time.now") == "my_clock__get_time_now"
    assert len(function_name("s" * 40, "t" * 60)) == 64
    schema = {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}
    grammar = harmony_constraint(None, tools={"time__get_current_time": schema, "git__git_status": None},
                                 tool_choice="time__get_current_time")
    assert "time__get_current_time" in grammar.description or grammar.grammar
    widened = {"type": "object", "properties": {"a": {"not": {"type": "string"}}}}  # checked after
    remote = {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}
    assert enforceable(schema) == schema and enforceable(widened) == widened
    assert enforceable(remote) is None  # refused by JSON mode: any object, the tool checks it


def test_a_real_servers_tools_are_called_in_a_turn_approved_and_audited(tmp_path: Path) -> None:
    pool = _pool(time=McpServer(command=TIME, args=("--local-timezone", "UTC")))
    try:
        tools = _tools(pool, "time")
        names = {t.qualified_name: t for t in tools.registry}
        assert {"functions.time__get_current_time", "functions.time__convert_time"} <= set(names)
        assert names["functions.time__get_current_time"].plugin == "MCP time"
        assert tool_tokens([t.description_for_model() for t in tools.registry]) > 20
        client = ScriptedClient([
            '<|channel|>commentary to=functions.time__get_current_time <|constrain|>json<|message|>'
            '{"timezone":"Europe/Oslo"}<|call|>',
            '<|channel|>commentary to=functions.time__get_current_time <|constrain|>json<|message|>'
            '{"timezone":"Nowhere/Atlantis"}<|call|>',
            "<|channel|>final<|message|>Done.<|return|>",
        ])
        session = ChatSession(client, get_template("harmony"))  # type: ignore[arg-type]
        asked: list[str] = []

        def approve(call: Any) -> Any:
            from app.tools.calls import Decision

            asked.append(call.tool.qualified_name)
            return Decision(True, how="asked: allowed")

        audit = AuditLog(tmp_path / "audit.jsonl")
        events = list(tool_turn(session, "What time is it?", tools.registry, approve=approve, audit=audit))
        outcomes = [o for e in events if isinstance(e, ToolsRan) for o in e.outcomes]
        assert asked == ["functions.time__get_current_time"] * 2
        assert outcomes[0].ok and outcomes[0].content["timezone"] == "Europe/Oslo"
        assert not outcomes[1].ok and outcomes[1].error_code == "E-TOOL-ERROR" and "Nowhere/Atlantis" in outcomes[1].error
        assert isinstance(events[-1], TurnResult) and events[-1].reason == "answer"
        declared = client.encoding.decode(client.prompts[0])
        assert "type time__get_current_time = (_: {" in declared and "namespace functions {" in declared
        logged = (tmp_path / "audit.jsonl").read_text()
        assert logged.count("functions.time__get_current_time") == 2 and "Europe/Oslo" in logged
        bad = names["functions.time__get_current_time"].function(timezone=5)
    except Exception as exc:  # the bad-arguments call is the last step and must raise
        assert getattr(exc, "code", None) is not None and exc.code.value == "E-CALL-SCHEMA", exc  # type: ignore[attr-defined]
        assert "/timezone" in str(exc)
    else:
        raise AssertionError(f"arguments against the schema were sent: {bad}")
    finally:
        pool.close()


@pytest.fixture()
def git_repo(tmp_path: Path) -> Path:
    repo = tmp_path / f"repo-{uuid.uuid4().hex[:8]}"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.org"]
    subprocess.run([*git[:3], "init", "-q", "-b", "main"], check=True)
    (repo / "notes.txt").write_text("first\n")
    subprocess.run([*git, "add", "notes.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "First notes"], check=True)
    (repo / "notes.txt").write_text("first\nsecond\n")
    return repo


def test_mcp_server_git_lists_calls_fails_and_comes_back_after_a_crash(git_repo: Path) -> None:
    pool = _pool(git=McpServer(command=GIT, args=("--repository", str(git_repo))))
    try:
        names = {t.name for t in pool.tools("git")}
        assert {"git__git_status", "git__git_log", "git__git_diff_unstaged"} <= names
        status = pool.call("git", "git_status", {"repo_path": str(git_repo)}, None)
        assert status["ok"] and "notes.txt" in json.dumps(status["content"])
        log = pool.call("git", "git_log", {"repo_path": str(git_repo)}, None)
        assert log["ok"] and "First notes" in json.dumps(log["content"])
        failed = pool.call("git", "git_status", {"repo_path": str(git_repo.parent / "nowhere")}, None)
        assert not failed["ok"] and failed["error"]["message"]
        for pid in _processes(str(git_repo)):  # the server dies under it (and its guard)
            os.kill(pid, signal.SIGKILL)
        with pytest.raises(McpError):
            pool.call("git", "git_status", {"repo_path": str(git_repo)}, None)
        again = pool.call("git", "git_status", {"repo_path": str(git_repo)}, None)
        assert again["ok"] and "notes.txt" in json.dumps(again["content"])
        assert any("stopped unexpectedly" in line for line in pool.logs["git"])
    finally:
        pool.close()
    time.sleep(0.5)
    assert _processes(str(git_repo)) == []


def test_cancel_reaches_the_call_and_a_crashing_server_restarts_with_backoff() -> None:
    pool = _pool(envy=McpServer(command=sys.executable, args=(ENV_SERVER,)))
    try:
        cancel = threading.Event()
        threading.Timer(0.5, cancel.set).start()
        began = time.monotonic()
        with pytest.raises(McpError) as stopped:
            pool.call("envy", "slow", {"seconds": 30}, cancel)
        assert stopped.value.code.value == "E-TOOL-CANCELLED" and time.monotonic() - began < 10
        with pytest.raises(McpError):
            pool.call("envy", "crash", {}, None)
        assert pool.call("envy", "secret", {"name": "HOME"}, None)["ok"]  # started again at once
        with pytest.raises(McpError):
            pool.call("envy", "crash", {}, None)
        with pytest.raises(McpError):
            pool.call("envy", "crash", {}, None)  # a second death in a row...
        with pytest.raises(McpError) as waiting:
            pool.call("envy", "secret", {"name": "HOME"}, None)  # ...means a wait before the next start
        assert "started again in" in waiting.value.message
        time.sleep(1.2)
        assert pool.call("envy", "secret", {"name": "HOME"}, None)["ok"]
    finally:
        pool.close()


def test_no_server_is_left_when_the_app_is_killed(tmp_path: Path) -> None:
    marker = f"marker-{uuid.uuid4().hex}"
    env = {**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path / "config")}
    assert cli(["mcp", "add", "envy", "--", sys.executable, ENV_SERVER, marker], env).returncode == 0
    app = subprocess.Popen([sys.executable, "-m", "app", "mcp", "call", "envy", "slow", '{"seconds": 120}'],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while len(_processes(marker)) < 2 and time.monotonic() < deadline:  # the guard and the server
            time.sleep(0.2)
        assert len(_processes(marker)) == 2
        app.kill()
        app.wait()
        deadline = time.monotonic() + 10
        while _processes(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _processes(marker) == []
    finally:
        app.kill()
        for pid in _processes(marker):
            os.kill(pid, signal.SIGKILL)


def test_the_login_shells_path_is_merged_after_the_apps_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert merged_path("/usr/bin:/bin", "/opt/node/bin:/usr/bin:/home/u/.local/bin") == \
        "/usr/bin:/bin:/opt/node/bin:/home/u/.local/bin"
    shell = tmp_path / "shell"
    shell.write_text("#!/bin/sh\necho 'Welcome back! PATH is set.'\necho HOME=/home/u\necho PATH=/opt/node/bin:/usr/bin\n")
    shell.chmod(0o755)
    monkeypatch.setenv("SHELL", str(shell))
    assert login_path.__wrapped__() == "/opt/node/bin:/usr/bin"
    node = tmp_path / "node-bin"
    node.mkdir()
    (node / "only-in-login").write_text("#!/bin/sh\n")
    (node / "only-in-login").chmod(0o755)
    from app.tools.mcp import env as mcp_env

    monkeypatch.setattr(mcp_env, "login_path", lambda: str(node))
    env = mcp_env.environment("x", McpServer(command="only-in-login"), Secrets())
    assert mcp_env.guarded("x", McpServer(command="only-in-login"), env)[1][3] == str(node / "only-in-login")
    with pytest.raises(Exception, match="was not found"):
        mcp_env.guarded("x", McpServer(command="no-such-program-anywhere"), env)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def http_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The loopback HTTP server (Streamable HTTP at /mcp, SSE at /sse on a second port)."""
    port, sse_port = _free_port(), _free_port()
    log = tmp_path / "server.log"
    procs = [subprocess.Popen([sys.executable, HTTP_SERVER, str(p), TOKEN, str(log), *extra])
             for p, extra in ((port, []), (sse_port, ["--sse"]))]
    try:
        for p in (port, sse_port):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", p)) == 0:
                        break
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp|http://127.0.0.1:{sse_port}/sse", log
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_a_remote_server_with_a_keyring_token_over_http_and_sse(
    secret_service: dict[str, str], tmp_path: Path, http_server: tuple[str, Path]
) -> None:
    urls, log = http_server
    url, sse = urls.split("|")
    env = _env(tmp_path, secret_service)
    added = cli(["mcp", "add", "web", "--url", url, "--secret-header", "Authorization"], env,
                stdin=f"Bearer {TOKEN}\n")
    assert added.returncode == 0, added.stderr
    assert cli(["mcp", "add", "old", "--url", sse, "--secret-header", "Authorization"], env,
               stdin=f"Bearer {TOKEN}\n").returncode == 0
    assert cli(["mcp", "add", "nokey", "--url", url], env).returncode == 0
    tools = [json.loads(line) for line in cli(["mcp", "tools", "web"], env).stdout.splitlines()]
    assert {"steps", "slow", "drop", "echo"} == {t["name"] for t in tools}
    assert {t["function"] for t in tools} >= {"web__echo"}
    echoed = cli(["mcp", "call", "web", "echo", '{"text": "hello"}'], env)
    assert echoed.returncode == 0 and "hello" in echoed.stdout, echoed.stderr
    via_sse = cli(["mcp", "call", "old", "echo", '{"text": "over sse"}'], env)
    assert via_sse.returncode == 0 and "over sse" in via_sse.stdout, via_sse.stderr
    resources = [json.loads(line) for line in cli(["mcp", "resources", "web"], env).stdout.splitlines()]
    assert resources[0]["uri"] == "notes://today" and resources[0]["mime_type"] == "text/plain"
    read = cli(["mcp", "read", "web", "notes://today"], env)
    assert read.returncode == 0 and "oat milk" in read.stdout
    prompts = [json.loads(line) for line in cli(["mcp", "prompts", "web"], env).stdout.splitlines()]
    assert prompts == [{"name": "review", "description": "Ask for a code review.",
                        "arguments": [{"name": "language", "required": True}]}]
    prompt = cli(["mcp", "prompt", "web", "review", "--arg", "language=Rust"], env)
    assert json.loads(prompt.stdout) == {"role": "user", "text": "Review this Rust code for bugs, then suggest one improvement."}
    refused = cli(["mcp", "tools", "nokey"], env)
    assert refused.returncode == 2 and "HTTP 401" in refused.stderr, refused.stderr
    tested = json.loads(cli(["mcp", "test", "web"], env).stdout)
    assert tested["resources"] == 1 and tested["prompts"] == 1 and tested["prompt_tokens"] > 0
    assert _files_hold(tmp_path, TOKEN) == []

    keyring = Secrets(secret_service_backend())  # the same private Secret Service the CLI wrote to
    pool = McpPool(lambda: {"web": McpServer(url=url, secret_headers=("Authorization",), timeout=1.0)}, keyring)
    try:  # progress keeps a call alive past its deadline; silence does not
        began = time.monotonic()
        assert pool.call("web", "steps", {"count": 4, "seconds": 0.6}, None) == {"ok": True, "content": {"result": "4 steps done"}}
        assert time.monotonic() - began > 2.0
        with pytest.raises(McpError) as late:
            pool.call("web", "slow", {"seconds": 20}, None)
        assert late.value.code.value == "E-TOOL-TIMEOUT"
        deadline = time.monotonic() + 10
        while not log.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert log.read_text() == "cancelled"  # the protocol's cancellation reached the server
        with pytest.raises(McpError):
            pool.call("web", "drop", {}, None)  # the connection drops mid-call: an error, no hang
        assert "web" not in pool.running()
    finally:
        pool.close()
    with pytest.raises(UnknownToolError, match="not used offline"):
        _tools(McpPool(lambda: {"web": McpServer(url=url)}), "web", offline=True)


def test_a_full_turn_on_gpt_oss_calls_an_mcp_tool_approved_run_and_answered(tiny_model: Any, tmp_path: Path) -> None:
    env = {**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path / "config"), "HARMONY_DESK_DATA": str(tmp_path / "data")}
    assert cli(["mcp", "add", "envy", "--tools", "square,secret", "--call-timeout", "30", "--",
                sys.executable, ENV_SERVER], env).returncode == 0
    listed = json.loads(cli(["mcp", "list"], env).stdout)
    assert listed["enabled_tools"] == ["square", "secret"] and listed["timeout"] == 30
    tested = json.loads(cli(["mcp", "test", "envy"], env).stdout)
    assert sorted(tested["tools"]) == ["envy__secret", "envy__square"]  # the allow-list holds
    base = ["chat", "--model", str(tiny_model), "--prompt", "Square a number.", "--threads", "1", "--ctx", "1024",
            "--max-tokens", "120", "--seed", "1", "--thinking-budget", "8", "--mcp", "envy",
            "--tool-choice", "envy__square", "--max-tool-calls", "1"]
    done = cli(base, env, stdin="y\n" * 4)
    assert done.returncode == 0, done.stderr
    assert "Run square · envy (runs code) with" in done.stderr  # asked, then run
    audit = [json.loads(line) for line in (tmp_path / "data" / "tool-audit.jsonl").read_text().splitlines()]
    first = audit[0]
    assert first["tool"] == "functions.envy__square" and first["ok"] and first["decision"] == "asked: allowed", first
    sent = json.loads(first["arguments_sent"])
    assert set(sent) == {"n"} and 0 <= sent["n"] <= 99  # the grammar kept to the server's schema
    assert first["result"] == {"result": sent["n"] ** 2}
    missing = cli([*base[:-6], "--mcp", "nowhere"], env)
    assert missing.returncode == 2 and "There is no MCP server named “nowhere”." in missing.stderr
