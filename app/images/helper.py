"""The app's end of the image helper process: every image decoded there, one at a time.

Guarantees: an image's bytes are parsed and decoded only in a helper process
(`app/images/decoder.py`), started on first use (`multiprocessing` spawn) and reused, whose
address space the kernel caps at `DECODE_MEMORY_MB` over its idle size and whose CPU time it
caps past each request; the app holds one image's pixels at a time from it, never a decoder's
working memory. A request that gets no answer within `DECODE_SECONDS` of wall time has its
helper killed (the next request starts a fresh one) and is answered `{"kind": "stopped"}`, as is
one whose helper died (its CPU limit, a crash in a decoder), and `{"kind": "unstarted"}` when
no helper starts; requests from several threads take
turns (one helper: the memory of decoding is that of one image, however many requests come at
once). Nothing from the helper is unpickled: a JSON head, then raw bytes.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import threading
import time
from typing import Any

from app.images.decoder import serve

DECODE_SECONDS = 10.0  # wall time of one request (one image checked or decoded)
DECODE_MEMORY_MB = 512  # over the helper's idle address space
START_SECONDS = 60.0  # for the helper to start (a Python process importing Pillow)
Head = dict[str, Any]


class _Helper:
    """One running helper process and the app's end of its pipe."""

    def __init__(self, max_pixels: int) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process: Any = ctx.Process(
            target=serve,
            args=(child, DECODE_MEMORY_MB, max_pixels),
            daemon=True,
            name="harmony-desk-images",
        )
        self.process.start()
        child.close()
        self.ready = bool(self._head(START_SECONDS).get("ready"))
        if not self.ready:
            self.stop()

    def _wait(self, deadline: float) -> bool:
        """Whether something came before `deadline` from a live helper."""
        while not self.conn.poll(max(0.0, min(0.5, deadline - time.monotonic()))):
            if time.monotonic() >= deadline or not self.process.is_alive():
                return False
        return True

    def _head(self, seconds: float) -> Head:
        """The helper's next head; `{}` when none came in `seconds` or it died."""
        try:
            if not self._wait(time.monotonic() + seconds):
                return {}
            answer = json.loads(self.conn.recv_bytes())
        except (EOFError, OSError, ValueError):
            return {}
        return answer if isinstance(answer, dict) else {}

    def ask(self, head: Head, data: bytes) -> tuple[Head, bytes]:
        """The answer to one request; `({}, b"")` when it came too late or not at all."""
        deadline = time.monotonic() + DECODE_SECONDS
        try:
            self.conn.send_bytes(json.dumps(head).encode())
            self.conn.send_bytes(data)
        except (OSError, ValueError):
            return {}, b""
        said = self._head(DECODE_SECONDS)
        if not said.get("payload"):
            return said, b""
        try:
            if not self._wait(deadline):
                return {}, b""
            return said, self.conn.recv_bytes()
        except (EOFError, OSError):
            return {}, b""

    def stop(self) -> None:
        self.process.kill()
        self.process.join(5)
        self.conn.close()


_LOCK = threading.Lock()
_HELPER: list[_Helper] = []  # the running helper, when one is


def ask(head: Head, data: bytes, max_pixels: int) -> tuple[Head, bytes]:
    """The helper's answer to `head` about `data` (see the module guarantees); `max_pixels`
    is the decompression-bomb bound a new helper is started with."""
    with _LOCK:
        if not _HELPER:
            started = _Helper(max_pixels)
            if not started.ready:
                return {"kind": "unstarted"}, b""
            _HELPER.append(started)
        helper = _HELPER[0]
        said, payload = helper.ask(head, data)
        if not said:  # too slow, or dead: it is not reused
            helper.stop()
            _HELPER.clear()
            return {"kind": "stopped"}, b""
        return said, payload


def helper_pid() -> int | None:
    """The running helper's process id (for tests and the debug pane), if one runs."""
    with _LOCK:
        return int(_HELPER[0].process.pid) if _HELPER else None


__all__ = ["DECODE_MEMORY_MB", "DECODE_SECONDS", "ask", "helper_pid"]
