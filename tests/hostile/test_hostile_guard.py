"""The local server's connections against hostile clients, on real loopback sockets: idle
sockets that once pushed every client into 503, one address holding every connection, headers
given twice ("the last one wins"), and a listening socket out of descriptors that once logged a
line per attempt. Each probe is built here; loopback's other addresses (127.0.0.2, ...) stand
for other peers. Servers run in-process on a scripted token source, but for the descriptor
case, which runs one in a child process with a low descriptor limit."""

from __future__ import annotations

import concurrent.futures as cf
import json
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from app.domain.sampling import Sampling
from app.engine.local.scripted import ScriptedClient
from app.engine.local.session import ChatSession
from app.server.connections import PER_PEER
from app.server.listen import server_config
from app.server.options import ServeOptions
from app.server.served import ServedModel
from app.templates.registry import get_template
from tests.server.test_server import _free_port

ROOT = Path(__file__).resolve().parents[2]
LINUX = pytest.mark.skipif(
    sys.platform != "linux", reason="other loopback addresses (127.0.0.2, ...) are Linux's"
)
SLOW_BODY = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
             b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")  # fmt: skip


@contextmanager
def serving(served: dict[str, Any] | None = None, **options: Any) -> Iterator[int]:
    """A server on a scripted source with `options` (and `served`: more of the `ServedModel`,
    an embedder, whether it sees images); its port."""
    import uvicorn

    template = get_template("harmony")
    client = ScriptedClient([])
    engine = cf.ThreadPoolExecutor(max_workers=1)

    def session() -> ChatSession:
        return ChatSession(client, template, sampling=Sampling(), max_tokens=16)

    model = ServedModel(
        name="scripted",
        engine=engine,
        session=session,
        template=template,
        n_ctx=8192,
        **(served or {}),
    )
    chosen = ServeOptions(
        port=_free_port(), **{"head_timeout_s": 30.0, "body_timeout_s": 30.0, **options}
    )
    server = uvicorn.Server(server_config(model, chosen))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield chosen.port
    finally:
        server.should_exit = True
        thread.join(10)
        engine.shutdown()


def _from(port: int, peer: str) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(peer, 0))
    return s


def _get(port: int, peer: str = "127.0.0.1") -> httpx.Response:
    transport = httpx.HTTPTransport(local_address=peer)
    with httpx.Client(transport=transport, timeout=10) as client:
        return client.get(f"http://127.0.0.1:{port}/v1/models")


def _raw(port: int, head: list[str], body: bytes = b"") -> tuple[int, dict[str, Any]]:
    """A request written by hand (headers as given, twice if given twice): status and JSON."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        lines = [*head, f"Content-Length: {len(body)}", "Connection: close", "", ""]
        s.sendall("\r\n".join(lines).encode() + body)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    status, body = int(answer.split(b" ", 2)[1]), answer.split(b"\r\n\r\n", 1)[1]
    return status, json.loads(body) if body.startswith(b"{") else {"h11": body.decode()}


def _closed(s: socket.socket, wait: float = 5.0) -> bytes | None:
    """What the server wrote before closing `s`, or None if it is still open after `wait`."""
    s.settimeout(wait)
    said = b""
    try:
        while chunk := s.recv(4096):
            said += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return said


@LINUX
def test_idle_sockets_never_push_a_request_into_503() -> None:
    """Idle sockets, more than the server takes requests at once and from several addresses,
    once made every request a 503 (uvicorn counted open connections); the idlest are closed."""
    with serving(max_connections=4) as port:
        idle = [_from(port, f"127.0.0.{2 + i % 4}") for i in range(40)]
        try:
            time.sleep(0.3)
            answer = _get(port)
            assert answer.status_code == 200, answer.text
            assert sum(_closed(s, 0.5) is not None for s in idle) >= 40 - 16  # the idlest went
        finally:
            for s in idle:
                s.close()


@LINUX
def test_one_address_cannot_hold_every_connection() -> None:
    with serving() as port:
        busy = [_from(port, "127.0.0.3") for _ in range(PER_PEER)]
        try:
            for s in busy:
                s.sendall(SLOW_BODY)  # a request under way on each, its body never finished
            time.sleep(0.3)
            with _from(port, "127.0.0.3") as one_more:
                said = _closed(one_more)
            assert said is not None and said.startswith(b"HTTP/1.1 503"), said
            assert b"too_many_connections" in said
            assert _get(port, "127.0.0.4").status_code == 200  # another address is served
        finally:
            for s in busy:
                s.close()
        time.sleep(0.3)
        assert _get(port, "127.0.0.3").status_code == 200  # and this one, once it let go


@LINUX
def test_requests_in_flight_past_the_limit_are_503_in_the_apis_shape() -> None:
    with serving(max_connections=4) as port:
        busy = [_from(port, f"127.0.0.{5 + i}") for i in range(4)]
        try:
            for s in busy:
                s.sendall(SLOW_BODY)
            time.sleep(0.3)
            answer = _get(port)
            assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
            assert answer.json()["error"]["code"] == "server_busy"
        finally:
            for s in busy:
                s.close()
        time.sleep(0.3)
        assert _get(port).status_code == 200


@pytest.mark.parametrize("twice", [
    ["Origin: http://evil.example", "Origin: {own}"],
    ["Origin: {own}", "Origin: http://evil.example"],
    ["Content-Type: text/plain", "Content-Type: application/json"],
    ["Content-Type: application/json", "Content-Type: text/plain"],
])  # fmt: skip
def test_a_header_given_twice_is_refused_not_the_last_one_taken(twice: list[str]) -> None:
    with serving() as port:
        own = f"http://127.0.0.1:{port}"
        body = json.dumps({"messages": [{"role": "user", "content": "Hi"}]}).encode()
        head = ["POST /v1/chat/completions HTTP/1.1", "Host: 127.0.0.1"]
        single = [h for h in ("Content-Type: application/json",) if "Content-Type" not in twice[0]]
        status, said = _raw(port, [*head, *single, *(t.format(own=own) for t in twice)], body)
        assert status == 400 and said["error"]["code"] == "duplicate_header", said
        assert status == 400 and twice[0].split(":")[0] in said["error"]["message"]


def test_hosts_and_keys_given_twice_are_refused() -> None:
    with serving(token="right-token") as port:
        get = ["GET /v1/models HTTP/1.1", "Host: 127.0.0.1"]
        ok, _ = _raw(port, [*get, "Authorization: Bearer right-token"])
        assert ok == 200
        for twice in (
            ["Authorization: Bearer wrong", "Authorization: Bearer right-token"],
            ["x-api-key: wrong", "x-api-key: right-token"],
        ):
            status, said = _raw(port, [*get, *twice])
            assert status == 400 and said["error"]["code"] == "duplicate_header", said
    with serving() as port:  # h11 refuses a second Host before the guard sees it
        status, said = _raw(
            port, ["GET /v1/models HTTP/1.1", "Host: evil.example", "Host: 127.0.0.1"]
        )
        assert status == 400, said


CHILD = textwrap.dedent("""
    import concurrent.futures as cf, logging, os, resource, sys, threading, time
    sys.path.insert(0, {root!r})
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s %(message)s")
    import uvicorn
    from app.domain.sampling import Sampling
    from app.engine.local.scripted import ScriptedClient
    from app.engine.local.session import ChatSession
    from app.server.listen import server_config
    from app.server.options import ServeOptions
    from app.server.served import ServedModel
    from app.templates.registry import get_template
    template, client = get_template("harmony"), ScriptedClient([])
    def session():
        return ChatSession(client, template, sampling=Sampling(), max_tokens=16)
    served = ServedModel(name="scripted", engine=cf.ThreadPoolExecutor(1), session=session,
                         template=template, n_ctx=8192)
    options = ServeOptions(port={port}, head_timeout_s=60.0, idle_timeout_s=60)
    server = uvicorn.Server(server_config(served, options))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    print("ready", flush=True)
    held = []
    for line in sys.stdin:
        try:
            while True:
                held.append(os.open("/dev/null", os.O_RDONLY))
        except OSError:
            print("exhausted", len(held), flush=True)
""")


@LINUX
def test_out_of_descriptors_idle_connections_go_and_the_log_says_it_once() -> None:
    """Out of descriptors, the accept loop once logged a traceback per attempt (61k lines under
    a flood) and waited for idle sockets' deadlines; now idle ones are closed at once, so a
    client is served, and the log says it once per interval."""
    port = _free_port()
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(root=str(ROOT), port=port)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=ROOT)  # fmt: skip
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    try:
        assert child.stdout.readline().strip() == "ready"
        idle = [_from(port, f"127.0.0.{2 + i % 3}") for i in range(6)]
        time.sleep(0.3)
        child.stdin.write("exhaust\n")
        child.stdin.flush()
        assert child.stdout.readline().startswith("exhausted")
        with cf.ThreadPoolExecutor(1) as pool:
            answered = pool.submit(_get, port)
            assert answered.result(timeout=8).status_code == 200  # idle ones gave theirs back
        assert all(_closed(s, 1) is not None for s in idle)
        for s in idle:
            s.close()
        child.stdin.write("exhaust\n")  # and now none is left to give back
        child.stdin.flush()
        assert child.stdout.readline().startswith("exhausted")
        waiting = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(8)]
        time.sleep(3.5)  # asyncio retries the accept each second
        for s in waiting:
            s.close()
    finally:
        child.kill()
        _, log = child.communicate(timeout=30)
    said = [line for line in log.splitlines() if "cannot accept connections" in line]
    assert len(said) == 1 and "EMFILE" in said[0], log[-3000:]
    assert "socket.accept() out of system resource" not in log and "Traceback" not in log
