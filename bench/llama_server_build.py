"""llama.cpp's own `llama-server` for the serving benches, of the llama.cpp vendored in
llama-cpp-python's sdist (the version the app runs).

Guarantees: `binary()` is its path in `~/.cache/harmony-desk-bench/llama.cpp/build/bin/`,
built there first when missing: the sdist fetched with `pip download --no-binary :all:
--no-deps`, its `vendor/llama.cpp` copied out and built with CMake and Ninja (minutes; said on
stderr, logged to `build.log`, which ends with `done <exit status>`). One build at a time: a
lock file, and a build another process started (a log without its `done` line, written to
lately) is waited for. A build that fails raises `Unavailable`, naming the log.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

VERSION = "0.3.36"  # llama-cpp-python's, as the app pins it
CACHE = Path.home() / ".cache" / "harmony-desk-bench"
SOURCE = CACHE / "llama.cpp"
BINARY = SOURCE / "build" / "bin" / "llama-server"
LOG = CACHE / "build.log"
CONFIGURE = [
    "cmake",
    "-B",
    "build",
    "-G",
    "Ninja",
    "-DLLAMA_CURL=OFF",
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_BUILD_TESTS=OFF",
]
BUILD = ["cmake", "--build", "build", "--target", "llama-server", "-j2"]
STALE_S = 180  # a build log not written to for this long belongs to no running build


class Unavailable(Exception):
    """A server could not be built or started."""


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def binary() -> Path:
    """llama-server's path, built first when missing (see the module guarantees)."""
    if BINARY.exists():
        return BINARY
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _await_other_build()
        if not BINARY.exists():
            _build()
    return BINARY


def _await_other_build() -> None:
    while LOG.exists() and time.time() - LOG.stat().st_mtime < STALE_S:
        lines = LOG.read_text(errors="replace").splitlines()
        if lines and lines[-1].startswith("done "):
            return
        say(f"waiting for the llama-server build under way ({LOG})")
        time.sleep(10)


def _build() -> None:
    say(
        f"llama-server is not at {BINARY}: building it from llama-cpp-python {VERSION}'s sdist"
        f" (pip download, CMake, Ninja; several minutes, logged to {LOG})"
    )
    if not (SOURCE / "CMakeLists.txt").exists():
        _unpack()
    with open(LOG, "w") as log:
        rc = 0
        for argv in (CONFIGURE, BUILD):
            rc = subprocess.run(argv, cwd=SOURCE, stdout=log, stderr=subprocess.STDOUT).returncode
            if rc:
                break
        print(f"done {rc}", file=log)
    if rc or not BINARY.exists():
        raise Unavailable(f"building llama-server failed (exit status {rc}; see {LOG})")
    say(f"built {BINARY}")


def _unpack() -> None:
    fetch = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-binary",
        ":all:",
        "--no-deps",
        f"llama-cpp-python=={VERSION}",
        "-d",
        str(CACHE),
    ]
    if subprocess.run(fetch, stdout=sys.stderr).returncode:
        raise Unavailable(f"pip could not download llama-cpp-python {VERSION}'s sdist")
    archive = next(CACHE.glob(f"llama_cpp_python-{VERSION}.tar.gz"), None)
    if archive is None:
        raise Unavailable(f"no llama_cpp_python-{VERSION}.tar.gz in {CACHE} after pip download")
    unpacked = CACHE / "sdist"
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    shutil.rmtree(SOURCE, ignore_errors=True)
    shutil.copytree(
        unpacked / archive.name.removesuffix(".tar.gz") / "vendor" / "llama.cpp", SOURCE
    )


__all__ = ["CACHE", "Unavailable", "binary", "say"]
