"""A real HTTP(S) file server on loopback for the download tests, with faults on demand.

`/files/NAME` serves a registered body with HTTP range requests (206, 416, ETag, If-Range);
`no_ranges` makes it ignore ranges (always 200, the whole file); `drop_after` cuts the next
response's connection after that many bytes (once); `rate` slows every response to that many
bytes per second; `if_range` False ignores If-Range (ranges of a changed file are served); `/redirect/NAME` redirects to the file, `/loop/a` and `/loop/b` redirect to
each other; `/html` is a web page; anything else is 404. Every request's path and Range
header are recorded. `tls=True` serves HTTPS with a throw-away self-signed certificate.
"""

from __future__ import annotations

import hashlib
import re
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class FileServer:
    def __init__(self, tmp: Path, *, tls: bool = False) -> None:
        self.files: dict[str, bytes] = {}
        self.no_ranges = False
        self.drop_after: int | None = None
        self.rate: float | None = None
        self.if_range = True  # False: ranges are served even when the file changed (no If-Range)
        self.requests: list[tuple[str, str | None]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server._handle(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda *_: None  # type: ignore[method-assign]  # clients that hang up
        scheme = "http"
        if tls:
            cert, key = tmp / "cert.pem", tmp / "key.pem"
            subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                 "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                 "-keyout", str(key), "-out", str(cert)],
                check=True, capture_output=True,
            )  # fmt: skip
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            self.cert = cert  # trust it with SSL_CERT_FILE to download from this server
            scheme = "https"
        self.base = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def add(self, name: str, body: bytes) -> str:
        """Serve `body` at /files/NAME; its URL."""
        self.files[name] = body
        return f"{self.base}/files/{name}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # --- handling ----------------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        rng = h.headers.get("Range")
        with self._lock:
            self.requests.append((h.path, rng))
        path = h.path.split("?", 1)[0]
        if path.startswith("/redirect/"):
            return self._redirect(h, "/files/" + path.removeprefix("/redirect/"))
        if path == "/loop/a":
            return self._redirect(h, "/loop/b")
        if path == "/loop/b":
            return self._redirect(h, "/loop/a")
        if path == "/html":
            return self._send(h, 200, b"<!DOCTYPE html><html><body>Sign in</body></html>",
                              {"Content-Type": "text/html"})  # fmt: skip
        body = self.files.get(path.removeprefix("/files/")) if path.startswith("/files/") else None
        if body is None:
            return self._send(h, 404, b"not found", {})
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        if_range = h.headers.get("If-Range")
        m = re.match(r"bytes=(\d+)-$", rng or "")
        if m and not self.no_ranges and (if_range is None or if_range == etag or not self.if_range):
            start = int(m[1])
            if start >= len(body):
                return self._send(h, 416, b"", {"Content-Range": f"bytes */{len(body)}"})
            headers = {"Content-Range": f"bytes {start}-{len(body) - 1}/{len(body)}", "ETag": etag}
            return self._send(h, 206, body[start:], headers)
        return self._send(
            h, 200, body, {"ETag": etag, "Accept-Ranges": "none" if self.no_ranges else "bytes"}
        )

    def _redirect(self, h: BaseHTTPRequestHandler, where: str) -> None:
        self._send(h, 302, b"", {"Location": where})

    def _send(
        self, h: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str]
    ) -> None:
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        with self._lock:
            cut, self.drop_after = self.drop_after, None
        limit = len(body) if cut is None else min(cut, len(body))
        step = 64 * 1024
        try:
            for i in range(0, limit, step):
                h.wfile.write(body[i : min(i + step, limit)])
                if self.rate:
                    time.sleep(min(step, limit - i) / self.rate)
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return
        if cut is not None:
            h.close_connection = True
            h.connection.shutdown(2)


def payload(size: int, seed: int = 7) -> bytes:
    """A GGUF-looking body of `size` bytes (the magic, then deterministic noise)."""
    import random

    rng = random.Random(seed)
    left, pieces = size - 4, [b"GGUF"]
    while left > 0:
        pieces.append(rng.randbytes(min(left, 1 << 20)))
        left -= len(pieces[-1])
    return b"".join(pieces)
