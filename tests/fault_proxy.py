"""A fault-injecting HTTP proxy on loopback, in front of a real OpenAI-compatible server.

Each request takes the next fault from the proxy's queue (none left: pass it through):
`401`, `403`, `404`, `429` (with `Retry-After: 1`), `500`, `cut` (the streamed answer is
forwarded, then the connection closes after a few events), `slow` (no answer for 5 s),
`canned` (a stream of chat-completion chunks whose contents are `canned`, as a server that
passes gpt-oss output through would send).
`requests` records the paths and headers that reached the proxy.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FaultProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.faults: list[str] = []
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # method, path, headers
        self.bodies: list[bytes] = []
        self.canned: list[str | dict[str, Any]] = []  # contents, or whole deltas
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:
                pass

            def do_GET(self) -> None:
                proxy.handle(self, "GET")

            def do_POST(self) -> None:
                proxy.handle(self, "POST")

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that hangs up (a cut or timed-out stream) is expected here

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        length = int(h.headers.get("content-length") or 0)
        body = h.rfile.read(length) if length else b""
        self.requests.append((method, h.path, {k.lower(): v for k, v in h.headers.items()}))
        self.bodies.append(body)
        fault = self.faults.pop(0) if self.faults else ""
        if fault in ("401", "403", "404", "429", "500"):
            payload = json.dumps({"error": {"message": f"injected {fault}"}}).encode()
            h.send_response(int(fault))
            if fault == "429":
                h.send_header("Retry-After", "1")
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(payload)))
            h.end_headers()
            h.wfile.write(payload)
            return
        if fault == "canned":
            h.send_response(200)
            h.send_header("Content-Type", "text/event-stream")
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            chunks = [c if isinstance(c, dict) else {"content": c} for c in self.canned] + [{}]
            for i, delta in enumerate(chunks):
                finish = "stop" if i == len(chunks) - 1 else None
                choice = {"index": 0, "delta": delta, "finish_reason": finish}
                event = {"id": "canned-1", "object": "chat.completion.chunk", "created": 0,
                         "model": "gemma", "choices": [choice]}
                line = b"data: " + json.dumps(event).encode() + b"\n\n"
                h.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            done = b"data: [DONE]\n\n"
            h.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))
            return
        if fault == "slow":
            time.sleep(5)
            h.close_connection = True
            return
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=120)
        headers = {"Content-Type": h.headers.get("content-type", "application/json")}
        upstream.request(method, h.path, body=body or None, headers=headers)
        reply = upstream.getresponse()
        h.send_response(reply.status)
        h.send_header("Content-Type", reply.getheader("content-type", "application/json"))
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        events = 0
        try:
            while True:
                line = reply.readline()
                if not line:
                    break
                h.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                h.wfile.flush()
                events += line.startswith(b"data:")
                if fault == "cut" and events >= 4:
                    h.close_connection = True
                    return  # no last chunk: the stream is cut
            h.wfile.write(b"0\r\n\r\n")
        finally:
            upstream.close()
