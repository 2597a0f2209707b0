"""From the engine's blocking generators to the asyncio loop: one engine thread, plain values.

Guarantees: every blocking engine call (loading, generating, running tools) runs on the one
engine thread, never on the GUI thread; its events reach the loop in order through
`call_soon_threadsafe`; an exception in the engine thread arrives as `StreamCrashed` (the
window shows it, nothing hangs); `ask` lets the engine thread wait for an answer that a
coroutine on the loop gives (tool approval), without blocking the loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

log = logging.getLogger("ui")
T = TypeVar("T")
_END = object()


@dataclass(frozen=True)
class StreamCrashed:
    """The engine thread raised: `message` says what happened."""

    message: str


class EngineBridge:
    """The engine thread and its way back to the asyncio loop."""

    def __init__(self) -> None:
        self._pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="engine")

    async def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the engine thread; await its result."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn)

    async def stream(self, make: Callable[[], Iterator[Any]]) -> AsyncIterator[Any]:
        """Iterate `make()` on the engine thread; yield its items on the loop, in order."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()

        def pump() -> None:
            try:
                for item in make():
                    loop.call_soon_threadsafe(queue.put_nowait, item)
            except Exception as exc:  # the window must hear of it, not hang
                log.exception("engine thread failed")
                loop.call_soon_threadsafe(
                    queue.put_nowait, StreamCrashed(f"{type(exc).__name__}: {exc}")
                )
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, _END)

        future = loop.run_in_executor(self._pool, pump)
        while (item := await queue.get()) is not _END:
            yield item
        await future

    @staticmethod
    def ask(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> T:
        """From the engine thread: run `coro` on the loop and wait for its answer."""
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


__all__ = ["EngineBridge", "StreamCrashed"]
