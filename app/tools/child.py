"""A helper process of the tool host, started with `spawn` and spoken to over one pipe.

Guarantees: the process is a daemon of the app (it never outlives it: the host side also
watches its parent, see `sandbox_host.die_with_parent`); `stop()` closes the pipe, gives an
idle process half a second to end by itself, then kills it and reaps it, so no zombie stays.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable
from multiprocessing.connection import Connection
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


__all__ = ["start_child", "stop_child"]
