"""The model the server serves, and the way from its engine thread to the server's loop.

Guarantees: every generation runs as one job on the engine threads it is given (a pool:
the model worker decodes as many at once as it has sequences and queues the rest in the order
they came); a job whose client has gone before its turn comes is skipped without touching the
model; a job's items reach the server's asyncio loop in order; an
exception in the engine thread reaches the request as itself (an `ApiError` keeps its status).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures as cf
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar, cast

from app.domain.embedding import Embedder
from app.domain.events import FinishReason, GenerationDone
from app.engine.session import ModelSession
from app.server.compactions import Compactions
from app.templates.base import Template

_END = object()
T = TypeVar("T")


@dataclass
class _Raised:
    error: BaseException


@dataclass
class ServedModel:
    """What the server needs of the loaded model: its name, the engine thread, a session
    on it (`session()`, called on the engine thread; a request's knobs travel in its
    `GenerationRequest`) and its chat template
    (which says what a request may ask of it before the request waits its turn), and whether it
    sees images (a projector loaded with it); the compactions made for its requests are kept
    with it (`compactions`: the next request that resends the conversation reuses them)."""

    name: str
    engine: cf.Executor
    session: Callable[[], ModelSession]
    template: Template
    n_ctx: int
    created: int = 0
    use: Callable[[], dict[str, int]] | None = None  # the worker's sequences, busy and queued
    embedder: Embedder | None = None  # what answers /v1/embeddings (None: it is refused)
    sees_images: bool = False  # a projector is loaded with the model (`ModelInfo.projector`)
    compactions: Compactions = field(default_factory=Compactions)  # made for its requests
    chats: bool = True  # False: an embedding model, served at /v1/embeddings only
    stats: collections.Counter[str] = field(
        default_factory=lambda: collections.Counter(
            dict.fromkeys(("requests", "waiting", "generated", "stopped"), 0)
        )
    )


class _Bursts(Generic[T]):
    """Items from the engine thread to the loop: one wake-up per burst, drained whole."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop, self.ready = loop, asyncio.Event()
        self.items: collections.deque[T | _Raised | object] = collections.deque()
        self.due = False  # the loop is already due to look at `items`

    def _woken(self) -> None:
        self.due = False  # before draining: an item added from now on wakes the loop again
        self.ready.set()

    def put(self, item: T | _Raised | object) -> None:
        """From the engine thread."""
        self.items.append(item)
        if not self.due:
            self.due = True
            self.loop.call_soon_threadsafe(self._woken)

    async def batches(self) -> AsyncIterator[list[T]]:
        """On the loop: what came since the last look, until the end (an error raised)."""
        while True:
            await self.ready.wait()
            self.ready.clear()
            batch: list[T] = []
            while self.items:
                item = self.items.popleft()
                if isinstance(item, _Raised):
                    raise item.error
                if item is _END:
                    if batch:
                        yield batch
                    return
                batch.append(cast(T, item))
            if batch:
                yield batch


async def on_engine(
    engine: cf.Executor,
    make: Callable[[], Iterator[T]],
    cancel: threading.Event,
    stats: collections.Counter[str],
) -> AsyncIterator[list[T]]:
    """Run `make()` on the engine thread; its items here, in order, in batches of what has
    come since the last look (see the guarantees). `stats` counts the jobs waiting, the
    tokens generated and the jobs stopped early."""
    bursts: _Bursts[T] = _Bursts(asyncio.get_running_loop())

    def pump() -> None:
        stats["waiting"] -= 1
        try:
            if cancel.is_set():
                stats["stopped"] += 1
                return  # the client left while waiting its turn
            for item in make():
                if isinstance(item, GenerationDone):
                    stats["generated"] += item.timings.generated
                    stats["stopped"] += item.reason is FinishReason.CANCELLED
                bursts.put(item)
        except BaseException as exc:  # handed to the request, which answers it
            bursts.put(_Raised(exc))
        finally:
            bursts.put(_END)

    stats["waiting"] += 1
    engine.submit(pump)
    try:
        async for batch in bursts.batches():
            yield batch
    finally:
        cancel.set()  # a request that ends early (its client left) stops its generation


__all__ = ["ServedModel", "on_engine"]
