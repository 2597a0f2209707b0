"""A stateful Python sandbox for the built-in `python` tool: a separate process per conversation.

Guarantees (each attempt to break them is a clear tool error, never a crash of the app):
- no network: socket creation, connects, binds and name lookups are refused;
- no other programs: subprocesses, `os.system`, `exec*`, `fork` and loading native libraries
  through ctypes are refused;
- files only inside its own temporary working folder (plus read access to Python's own
  library and to folders the user granted);
- limits on CPU time, memory and output size, and a wall-clock deadline (the process is killed
  past it and a fresh one starts on the next call; its state is lost, and the error says so).
The guard is Python's audit hooks plus OS resource limits: it stops model-written code from
wandering, it is not a hostile-code jail.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

_BOOTSTRAP = r"""
import io, json, os, resource, sys, traceback, contextlib
limits = json.loads(sys.argv[1])
resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1))
resource.setrlimit(resource.RLIMIT_AS, (limits["memory"], limits["memory"]))
resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_size"], limits["file_size"]))
WORK = os.path.realpath(os.getcwd())
READ_ONLY = [os.path.realpath(p) for p in limits["read_roots"]]
GRANTED = [os.path.realpath(p) for p in limits["granted"]]
BLOCKED = ("socket.", "subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.fork",
           "os.spawn", "ctypes.dlopen", "ctypes.cdata", "os.kill", "pty.", "webbrowser.")
def inside(path, roots):
    return any(path == r or path.startswith(r + os.sep) for r in roots)
def hook(event, args):
    if event.startswith(BLOCKED):
        raise PermissionError(f"the sandbox does not allow {event}")
    if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.realpath(os.fsdecode(args[0]))
        mode = args[1] if len(args) > 1 and isinstance(args[1], str) else "r"
        writing = any(c in mode for c in "wax+")
        if inside(path, [WORK] + GRANTED) or (not writing and inside(path, READ_ONLY)):
            return
        raise PermissionError(f"the sandbox cannot open {path}: outside its working folder")
out = sys.__stdout__
namespace = {"__name__": "__main__"}
for line in sys.stdin:
    code = json.loads(line)["code"]
    buf = io.StringIO()
    ok, error = True, None
    if hook not in globals().get("_hooked", []):
        sys.addaudithook(hook)
        globals()["_hooked"] = [hook]
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            try:
                result = eval(compile(code, "<tool>", "eval"), namespace)
                if result is not None:
                    print(repr(result))
            except SyntaxError:
                exec(compile(code, "<tool>", "exec"), namespace)
    except MemoryError:
        ok, error = False, "MemoryError: the code used more memory than the sandbox allows"
    except BaseException as exc:
        ok, error = False, "".join(traceback.format_exception_only(type(exc), exc)).strip()
    text = buf.getvalue()
    if len(text) > limits["output"]:
        text = text[: limits["output"]] + f"\n… (output cut at {limits['output']} characters)"
    out.write(json.dumps({"ok": ok, "output": text, "error": error}) + "\n")
    out.flush()
"""


@dataclass(frozen=True)
class SandboxLimits:
    cpu_seconds: int = 10
    wall_seconds: float = 30.0
    memory_bytes: int = 512 * 1024 * 1024
    output_chars: int = 20_000
    file_bytes: int = 16 * 1024 * 1024


@dataclass(frozen=True)
class SandboxResult:
    ok: bool
    output: str = ""
    error: str | None = None
    code: str | None = None  # E-TOOL-TIMEOUT when the deadline passed


class PythonSandbox:
    """One conversation's Python process; state (variables, imports) lives between calls."""

    def __init__(
        self, limits: SandboxLimits | None = None, granted: list[str] | None = None
    ) -> None:
        self.limits = limits or SandboxLimits()
        self.granted = list(granted or [])
        self._folder = tempfile.TemporaryDirectory(prefix="harmony-desk-python-")
        self._process: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()  # one call at a time: parallel calls queue in call order

    @property
    def workdir(self) -> Path:
        return Path(self._folder.name)

    def _start(self) -> subprocess.Popen[str]:
        read_roots = sorted(
            {sys.prefix, sys.base_prefix, *[p for p in sys.path if p and Path(p).is_dir()]}
        )
        config = {
            "cpu_s": self.limits.cpu_seconds,
            "memory": self.limits.memory_bytes,
            "file_size": self.limits.file_bytes,
            "output": self.limits.output_chars,
            "read_roots": read_roots,
            "granted": self.granted,
        }
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.workdir), "LANG": "C.UTF-8"}
        return subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _BOOTSTRAP, json.dumps(config)],
            cwd=self.workdir,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )

    def run(self, code: str) -> SandboxResult:
        """Run `code` in the conversation's process; the last expression's value is printed."""
        with self._lock:
            return self._run(code)

    def _run(self, code: str) -> SandboxResult:
        if self._process is None or self._process.poll() is not None:
            self._process = self._start()
        proc = self._process
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps({"code": code}) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            self._kill()
            return SandboxResult(
                False, error="the sandbox process had stopped; it restarts on the next call"
            )
        reply = self._read(proc)
        if reply is None:
            return SandboxResult(
                False,
                code="E-TOOL-TIMEOUT",
                error=f"no result within {self.limits.wall_seconds:g} s (or the CPU limit was hit);"
                " the sandbox was restarted and its variables are gone",
            )
        data = json.loads(reply)
        return SandboxResult(bool(data["ok"]), data.get("output", ""), data.get("error"))

    def _read(self, proc: subprocess.Popen[str]) -> str | None:
        import selectors

        assert proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout=self.limits.wall_seconds):
                self._kill()
                return None
        line = proc.stdout.readline()
        if not line:  # the process died (CPU limit, a crash)
            self._kill()
            return None
        return line

    def _kill(self) -> None:
        proc, self._process = self._process, None
        if proc is not None:
            proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()

    def close(self) -> None:
        self._kill()
        self._folder.cleanup()

    def __enter__(self) -> PythonSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["PythonSandbox", "SandboxLimits", "SandboxResult"]
