"""The guard between the app and one local MCP server: the server never outlives the app.

The app starts `python -m app.tools.mcp_guard APP_PID COMMAND [ARGS…]` (a bundle starts
itself with `--mcp-guard`) in a session of its own; the guard runs the server with the same
standard streams (it reads and writes none itself) and watches the app's process. Guarantees:
when the app ends in any way, a kill included, the server and everything it started are
stopped within a second (asked first, killed two seconds later); when the server ends, the
guard ends with its exit status. Only the standard library is imported here: the guard starts
in a few tens of milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

POLL_S = 0.2
GRACE_S = 2.0


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
        print("usage: mcp_guard APP_PID COMMAND [ARGS...]", file=sys.stderr)
        return 2
    app_pid = int(argv[0])
    try:
        child = subprocess.Popen(argv[1:])
    except OSError as exc:
        print(f"cannot run {argv[1]}: {exc}", file=sys.stderr)
        return 127

    def ended(*_: object) -> None:
        _stop(child)
        sys.exit(143)

    signal.signal(signal.SIGTERM, ended)
    while True:
        try:
            return child.wait(POLL_S)
        except subprocess.TimeoutExpired:
            pass
        if os.getppid() != app_pid:  # the app has gone: its children were handed on
            _stop(child)
            return 137


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
