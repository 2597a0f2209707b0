"""A client that goes away mid-answer, or before its body has come, on the real `serve` (the
bundled SmolLM2, on loopback): the server's log file says so in one INFO line (method, path,
after how long, whether the answer had begun) and has no traceback, and the generation stops."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.server.guard import Exchange
from tests.server.test_server import _serve, left_midway

ESSAY = {"messages": [{"role": "user", "content": "Write a very long essay about rivers."}],
         "max_tokens": 256, "temperature": 0, "stream": True}


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The server and the folder its data (its log file) and its output go to."""
    tmp = tmp_path_factory.mktemp("gone")
    server = _serve("default", tmp, "--max-tokens", "256")
    try:
        yield next(server), tmp
    finally:
        server.close()


def _logged(tmp: Path, pattern: str) -> list[str]:
    """The log file's lines that match `pattern`, once there is one (the line is written after
    the answer's end), or after 30 s."""
    log = tmp / "data" / "logs" / "harmony-desk.log"
    deadline = time.monotonic() + 30
    while True:
        lines = log.read_text().splitlines() if log.exists() else []
        found = [line for line in lines if re.search(pattern, line)]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def _no_traceback(tmp: Path) -> None:
    said = (tmp / "data" / "logs" / "harmony-desk.log").read_text()
    said += "".join(p.read_text() for p in tmp.glob("serve-*.log"))  # uvicorn's own, on stderr
    assert "Traceback" not in said and " ERROR " not in said, said


def test_a_client_that_leaves_mid_stream_is_one_info_line(serving: tuple[str, Path]) -> None:
    base, tmp = serving
    before, after = left_midway(base, "/v1/chat/completions", ESSAY, lines=6)
    assert after["stopped"] == before["stopped"] + 1  # the generation was stopped
    went = _logged(tmp, r"INFO server: POST /v1/chat/completions: the client went away after \d+ ms,"
                        r" mid-answer \(200 sent\)")
    assert len(went) == 1, went
    _no_traceback(tmp)


def test_a_client_that_leaves_before_its_body_is_one_info_line(serving: tuple[str, Path]) -> None:
    base, tmp = serving
    port = int(base.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as leaving:
        leaving.sendall(b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        b"Content-Length: 100\r\n\r\n{\"input\"")
        time.sleep(0.3)  # the body is being read
    went = _logged(tmp, r"INFO server: POST /v1/responses: the client went away after \d+ ms, before the answer$")
    assert len(went) == 1, went
    _no_traceback(tmp)


def test_a_client_that_leaves_after_the_last_byte_did_not_go_away() -> None:
    exchange = Exchange()
    exchange.sent({"type": "http.response.start", "status": 200})
    exchange.sent({"type": "http.response.body", "body": b"{}", "more_body": False})
    exchange.received({"type": "http.disconnect"})  # what is read after the answer's end
    assert re.fullmatch(r"GET /x 200 \d+ ms", exchange.line("GET", "/x"))
    gone = Exchange()
    gone.sent({"type": "http.response.start", "status": 200})
    gone.received({"type": "http.disconnect"})
    assert re.fullmatch(r"GET /x\\x0a: the client went away after \d+ ms, mid-answer \(200 sent\)",
                        gone.line("GET", "/x\n"))
