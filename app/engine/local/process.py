"""The model worker's OS process, seen from the app: start it, stop it, say how it died.

Guarantees: this is the only app-side module that imports the worker (`app.engine.worker`),
and it does so inside `start`, so the app process never loads the worker's modules; a worker
that does not stop when asked is killed; a death is put into words (`death_reason`).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import signal
from multiprocessing.connection import Connection
from typing import Any

from app.engine.protocol import ShutdownRequest

_SIGNALS = {
    signal.SIGKILL: "the model worker was killed (SIGKILL), most often by the system when memory"
    " ran out",
    signal.SIGABRT: "llama.cpp stopped the model worker on a failed check (SIGABRT), usually"
    " because of a bad model file",
    signal.SIGSEGV: "the model worker crashed (SIGSEGV)",
    signal.SIGTERM: "the model worker was terminated (SIGTERM)",
}


def death_reason(exitcode: int | None) -> str:
    """The worker's exit, as a clause a person can read."""
    if exitcode is None:
        return "the model worker stopped answering"
    if exitcode < 0:
        sig = signal.Signals(-exitcode)
        return _SIGNALS.get(sig, f"the model worker was stopped by the signal {sig.name}")
    return f"the model worker exited unexpectedly (status {exitcode})"


class WorkerProcess:
    """One running worker process and the app's end of its pipe."""

    def __init__(self, embedding: bool = False) -> None:
        # The one edge across the process line, deferred: only the spawned process runs it.
        # `embedding`: the embedding worker (`app/engine/worker/embedding.py`), else the chat one.
        if embedding:
            from app.engine.worker.embedding import serve
        else:
            from app.engine.worker.main import serve

        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        name = "harmony-desk-embedding-worker" if embedding else "harmony-desk-worker"
        self._process: Any = ctx.Process(target=serve, args=(child,), daemon=True, name=name)
        self._process.start()
        child.close()
        self.conn: Connection = parent

    @property
    def pid(self) -> int | None:
        pid: int | None = self._process.pid
        return pid

    def alive(self) -> bool:
        return bool(self._process.is_alive())

    def death(self) -> str:
        """Why the process is gone, once it is (it is given two seconds to finish dying)."""
        self._process.join(timeout=2)
        return death_reason(self._process.exitcode)

    def stop(self) -> None:
        """Ask the worker to stop; kill it if it has not within five seconds."""
        with contextlib.suppress(OSError, EOFError):
            self.conn.send(ShutdownRequest())
        self._process.join(timeout=5)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self.conn.close()

    def reap(self) -> None:
        """Close the pipe of a process that died."""
        self._process.join(timeout=2)
        self.conn.close()
