"""The guard between the app and one local MCP server: the server never outlives the app.

The app starts `python -I …/mcp/guard.py APP_PID COMMAND [ARGS…]` (a bundle starts itself with
`--mcp-guard`) in a session of its own; the guard runs the server with the same standard input
and error, relays its standard output, and watches the app's process. Guarantees: when the app
ends in any way, a kill included, the server and everything it started are stopped within a
second (asked first, killed two seconds later); when the server ends on its own, the guard
writes one last line of its own to the shared standard error, `EXIT_LINE` and the status
(negative: the signal that ended it), which the app reads to say how the server ended and keeps
out of what it shows of that stream, and ends with the server's exit status. Only JSON-RPC
lines (a line that starts with `{` or `[`, of at most `MAX_LINE` bytes) reach the app: anything
else the server prints to its standard output (logs, banners, a flood) is dropped as it comes,
so it costs the app neither memory nor output. Only the standard library is imported here: the
guard starts in a few tens of milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from typing import IO

POLL_S = 0.2
GRACE_S = 2.0
MAX_LINE = 32 * 1024 * 1024
CHUNK = 1 << 16
EXIT_LINE = "harmony-desk mcp guard: the server ended with status "


def _grow(line: bytearray, piece: bytes, keep: bool | None) -> bool | None:
    """Add `piece` to the line being read; whether it is kept (None: only blanks so far)."""
    if keep is None and (head := piece.lstrip()[:1]):
        keep = head in (b"{", b"[")
    if keep is False or len(line) + len(piece) > MAX_LINE:
        line.clear()
        return False  # noise or too long: skipped up to its end of line
    line += piece
    return keep


def _relay(source: IO[bytes], sink: IO[bytes]) -> None:
    """Copy JSON-RPC lines from `source` to `sink`; drop every other line and any too long."""
    line = bytearray()
    keep: bool | None = None
    while chunk := os.read(source.fileno(), CHUNK):
        *ended, rest = chunk.split(b"\n")
        for piece in ended:
            if _grow(line, piece + b"\n", keep):
                with contextlib.suppress(OSError, ValueError):
                    sink.write(line)
                    sink.flush()
            line.clear()
            keep = None
        keep = _grow(line, rest, keep)


def _stop(child: subprocess.Popen[bytes]) -> None:
    """End the server, then everything else in the guard's process group (the guard too)."""
    with contextlib.suppress(OSError):
        child.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(GRACE_S)
    if sys.platform != "win32" and os.getpgrp() == os.getpid():  # a group of its own only
        os.killpg(os.getpgrp(), signal.SIGKILL)
    with contextlib.suppress(OSError):
        child.kill()


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        print("usage: guard APP_PID COMMAND [ARGS...]", file=sys.stderr)
        return 2
    app_pid = int(argv[0])
    try:
        child = subprocess.Popen(argv[1:], stdout=subprocess.PIPE)
    except OSError as exc:
        print(f"cannot run {argv[1]}: {exc.strerror or exc}", file=sys.stderr)
        print(f"\n{EXIT_LINE}127", file=sys.stderr, flush=True)
        return 127
    assert child.stdout is not None
    relay = threading.Thread(target=_relay, args=(child.stdout, sys.stdout.buffer), daemon=True)
    relay.start()

    def ended(*_: object) -> None:
        _stop(child)
        sys.exit(143)

    signal.signal(signal.SIGTERM, ended)
    while True:
        try:
            status = child.wait(POLL_S)
            relay.join(1.0)  # what it wrote last reaches the app
            with contextlib.suppress(OSError, ValueError):
                print(f"\n{EXIT_LINE}{status}", file=sys.stderr, flush=True)  # a line of its own
            return status
        except subprocess.TimeoutExpired:
            pass
        if os.getppid() != app_pid:  # the app has gone: its children were handed on
            _stop(child)
            return 137


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
