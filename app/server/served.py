"""The model the server serves, and the way from its engine thread to the server's loop.

Guarantees: every generation runs as one job on the one engine thread it is given (the
window's, or `serve`'s own), so clients and the window's own turns are served in the order
they asked, never two at once; a job whose client has gone before its turn comes is skipped
without touching the model; a job's items reach the server's asyncio loop in order; an
exception in the engine thread reaches the request as itself (an `ApiError` keeps its status).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures as cf
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from app.domain.sampling import Sampling
from app.engine.chat import ChatSession
from app.engine.protocol import FinishReason, GenerationDone

_END = object()


@dataclass
class _Raised:
    error: BaseException


@dataclass
class ServedModel:
    """What the server needs of the loaded model: its name, the engine thread, and a session
    on it (`session(sampling, max_tokens)`, called on the engine thread)."""

    name: str
    engine: cf.Executor
    session: Callable[[Sampling | None, int], ChatSession]
    n_ctx: int
    created: int = 0
    stats: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("requests", "waiting", "generated", "stopped"), 0)
    )


async def on_engine(
    engine: cf.Executor,
    make: Callable[[], Iterator[Any]],
    cancel: threading.Event,
    stats: dict[str, int] | None = None,
) -> AsyncIterator[Any]:
    """Run `make()` on the engine thread; its items here, in order, in batches of what has
    come since the last look (see the guarantees).
    `stats` counts the jobs waiting, the tokens generated and the jobs stopped early."""
    stats = stats if stats is not None else {}
    loop = asyncio.get_running_loop()
    items: collections.deque[Any] = collections.deque()
    ready = asyncio.Event()
    due = [False]  # the loop is already due to look at `items`

    def woken() -> None:
        due[0] = False  # before draining: an item added from now on wakes the loop again
        ready.set()

    def put(item: Any) -> None:
        items.append(item)
        if not due[0]:  # one wake-up per burst of items, not one per item
            due[0] = True
            loop.call_soon_threadsafe(woken)

    def pump() -> None:
        stats["waiting"] = stats.get("waiting", 0) - 1
        try:
            if cancel.is_set():
                stats["stopped"] = stats.get("stopped", 0) + 1
                return  # the client left while waiting its turn
            for item in make():
                if isinstance(item, GenerationDone):
                    stats["generated"] = stats.get("generated", 0) + item.timings.generated
                    if item.reason is FinishReason.CANCELLED:
                        stats["stopped"] = stats.get("stopped", 0) + 1
                put(item)
        except BaseException as exc:  # handed to the request, which answers it
            put(_Raised(exc))
        finally:
            put(_END)

    stats["waiting"] = stats.get("waiting", 0) + 1
    engine.submit(pump)
    try:
        while True:
            await ready.wait()
            ready.clear()
            batch: list[Any] = []
            while items:
                item = items.popleft()
                if isinstance(item, _Raised):
                    raise item.error
                if item is _END:
                    if batch:
                        yield batch
                    return
                batch.append(item)
            if batch:
                yield batch
    finally:
        cancel.set()  # a request that ends early (its client left) stops its generation


__all__ = ["ServedModel", "on_engine"]
