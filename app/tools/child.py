"""A helper process of the tool host, started with `spawn` and spoken to over one pipe.

Both children (the python sandbox's `sandbox_host` and the plugins' `plugin_child`) and the
app's side of each use this module.

Guarantees: the process is a daemon of the app (it never outlives it: the child side also
watches its parent, see `die_with_parent`); `stop_child()` closes the pipe, gives an idle
process half a second to end by itself, then kills it and reaps it, so no zombie stays.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any


def start_child(
    target: Callable[..., None], args: tuple[Any, ...], name: str
) -> tuple[Any, Connection]:
    """A started daemon process running `target(pipe_end, *args)`, and the app's end of the pipe."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=target, args=(child, *args), daemon=True, name=name)
    process.start()
    child.close()
    return process, parent


def stop_child(process: Any, conn: Connection | None) -> None:
    """Close the pipe, then end and reap the process (killed if it does not end by itself)."""
    if conn is not None:
        conn.close()
    if process is not None:
        process.join(timeout=0.5)  # an idle host ends at the closed pipe
        if process.is_alive():
            process.kill()
            process.join()


def die_with_parent() -> None:
    """End this process as soon as the app's process ends, however it ends (child side)."""
    parent = mp.parent_process()
    if parent is None:
        return

    def watch() -> None:
        wait([parent.sentinel])
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


__all__ = ["die_with_parent", "start_child", "stop_child"]
