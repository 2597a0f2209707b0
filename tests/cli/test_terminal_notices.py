"""The terminal chat, through its real entry point (`python -m app chat`), says what the window
says beside the answer and names tools as the window does:

- the real MCP server "time" (`fixtures/mcp_clock_server.py`, built with the SDK, over stdio) is
  called by a scripted model behind a real OpenAI-compatible server on loopback, which then
  echoes the tool's result in its template's markup as its answer, as a small model did in the
  review: the approval question names the tool "get_current_time · time", never
  `functions.time__get_current_time`; stdout holds the answer without the markup; the reply's
  notice is one line on stderr, `! ` and its words;
- `TerminalNotices` prints each notice once, as one line, on a real terminal (a pty) dim and
  with no control character of the notice's own reaching it; in a pipe plain; and what the
  terminal already says in its own words (a parse problem, what the overflow policy left out)
  is not said twice.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from app.cli.terminal_notices import TerminalNotices
from app.domain.echoed_markup import echo_notice
from app.domain.events import ParseIssue, Severity
from app.domain.history import Reply, Segment
from app.errors import ErrorCode
from tests.keys.test_endpoints import cli

CLOCK = str(Path(__file__).resolve().parents[1] / "fixtures" / "mcp_clock_server.py")
CALL = {"tool_calls": [{"index": 0, "id": "call-1", "type": "function",
                        "function": {"name": "time__get_current_time",
                                     "arguments": '{"timezone": "Europe/Oslo"}'}}]}  # fmt: skip
ECHO = '<tool_response>{"timezone": "Europe/Oslo", "day_of_week": "Friday"}</tool_response>'


class ScriptedEndpoint:
    """An OpenAI-compatible server on loopback whose chat completions stream, in turn, the
    scripted deltas (`{"content": ...}` or `{"tool_calls": [...]}`); each request body is kept."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.bodies: list[dict[str, Any]] = []
        me = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send(404, "application/json", b'{"error": {"message": "none"}}')

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                me.bodies.append(json.loads(body))
                delta = me.replies.pop(0) if me.replies else {"content": "Nothing more."}
                finish = "tool_calls" if "tool_calls" in delta else "stop"
                lines = b"".join(_event(d, f) for d, f in ((delta, None), ({}, finish)))
                self._send(200, "text/event-stream", lines + b"data: [DONE]\n\n")

            def _send(self, status: int, kind: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _event(delta: dict[str, Any], finish: str | None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    chunk = {"id": "scripted-1", "object": "chat.completion.chunk", "created": 0,
             "model": "scripted", "choices": [choice]}  # fmt: skip
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


@pytest.fixture
def endpoint() -> Iterator[ScriptedEndpoint]:
    served = ScriptedEndpoint([CALL, {"content": ECHO}])
    try:
        yield served
    finally:
        served.close()


def test_the_terminal_names_the_tool_readably_and_prints_the_echo_notice(
    endpoint: ScriptedEndpoint, tmp_path: Path
) -> None:
    env = {**os.environ, "HARMONY_DESK_CONFIG": str(tmp_path / "config"),
           "HARMONY_DESK_DATA": str(tmp_path / "data"), "HARMONY_DESK_CACHE": str(tmp_path / "cache"),
           "HOME": str(tmp_path / "home")}  # fmt: skip
    assert cli(["mcp", "add", "time", "--", sys.executable, CLOCK], env).returncode == 0
    done = cli(["chat", "--endpoint", endpoint.url, "--remote-model", "scripted", "--mcp", "time",
                "--prompt", "What time is it in Oslo?"], env, stdin="y\n")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Run get_current_time · time (read-only) with" in done.stderr, done.stderr[-3000:]
    assert "Run functions." not in done.stderr
    assert "tool_response" not in done.stdout and '"timezone": "Europe/Oslo"' in done.stdout
    notices = [line for line in done.stderr.splitlines() if line.startswith("! ")]
    assert len(notices) == 1, done.stderr[-3000:]
    assert notices[0].startswith("! The model repeated a tool result in its template's markup")
    assert '"day_of_week": "Friday"' in notices[0] and "\x1b" not in done.stderr  # a pipe: plain
    second = endpoint.bodies[1]["messages"]
    assert any(m.get("role") == "tool" for m in second)  # the call ran before the echo came


def _reply(*notices: str) -> Reply:
    return Reply(segments=[Segment("notice", n, complete=True) for n in notices])


def test_each_notice_is_one_line_once_and_what_the_terminal_says_is_not_repeated() -> None:
    err = io.StringIO()
    issue = ParseIssue(ErrorCode.CALL_SCHEMA, "The call was not valid JSON.", Severity.WARNING)
    reply = _reply(issue.message)
    shown = TerminalNotices(reply, err)
    shown(issue)  # the terminal says it as "[E-…] …": the notice is not said again
    words = echo_notice(['{"a": 1}\n{"b":\t2}'])
    reply.segments.append(Segment("notice", words, complete=True))
    shown(issue)
    shown(issue)  # once only
    lines = err.getvalue().splitlines()
    assert lines == ["! " + " ".join(words.split())], lines


def test_on_a_terminal_a_notice_is_dim_and_its_own_controls_never_reach_it() -> None:
    import pty

    leader, follower = pty.openpty()
    with open(follower, "w", encoding="utf-8", closefd=True) as terminal:
        reply = Reply()
        shown = TerminalNotices(reply, terminal)
        said = "Left out \x1b]52;c;aGk=\x07of the prompt: 2 exchanges."
        reply.segments.append(Segment("notice", said, complete=True))
        shown(ParseIssue(ErrorCode.CALL_SCHEMA, "seen only in the debug record", Severity.DEBUG))
        terminal.flush()
    said = os.read(leader, 4096).decode()
    os.close(leader)
    assert said.startswith("\x1b[2m! Left out ]52;c;aGk=of the prompt: 2 exchanges.\x1b[22m")
    assert said.count("\x1b") == 2 and "\x07" not in said, repr(said)
