"""From the engine's blocking generators to the asyncio loop: one engine thread, plain values.

Guarantees: every blocking engine call (loading, generating, running tools) runs on the one
engine thread, never on the GUI thread; its events reach the loop in order, woken through a
socket pair (no Qt signal per event from the engine thread: with PySide6 6.12 thousands of
cross-thread emissions ended in a refcount crash, seen here); an exception in the engine
thread arrives as `StreamCrashed` (the window shows it, nothing hangs); `ask` lets the engine
thread wait for an answer that a coroutine on the loop gives (tool approval), without
blocking the loop, and during a stream the question arrives after every earlier event.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures as cf
import contextlib
import logging
import socket
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


class _Ask:
    """A coroutine the engine thread wants run on the loop, and its answer."""

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.answer: cf.Future[Any] = cf.Future()

    def start(self) -> None:
        task = asyncio.ensure_future(self.coro)

        def done(t: asyncio.Future[Any]) -> None:
            if t.cancelled():
                self.answer.cancel()
            elif t.exception() is not None:
                self.answer.set_exception(t.exception())
            else:
                self.answer.set_result(t.result())

        task.add_done_callback(done)


def _pump(
    make: Callable[[], Iterator[Any]],
    items: collections.deque[Any],
    wake: Callable[[], None],
    done: Callable[[], None],
) -> None:
    """On the engine thread: every item of `make()` into `items`, then the end, always."""
    try:
        for item in make():
            items.append(item)
            wake()
    except Exception as exc:  # the window must hear of it, not hang
        log.exception("engine thread failed")
        items.append(StreamCrashed(f"{type(exc).__name__}: {exc}"))
    finally:
        done()


class EngineBridge:
    """The engine thread and its way back to the asyncio loop."""

    def __init__(self) -> None:
        self._pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="engine")
        self._channel: tuple[collections.deque[Any], Callable[[], None]] | None = None

    @property
    def executor(self) -> cf.Executor:
        """The engine thread, for other loops that queue work on it (the local server)."""
        return self._pool

    async def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the engine thread; await its result."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn)

    async def stream(self, make: Callable[[], Iterator[Any]]) -> AsyncIterator[Any]:
        """Iterate `make()` on the engine thread; yield its items on the loop, in order.

        Items cross in a deque; the engine thread wakes the loop by writing one byte to a
        socket pair (only when the loop is not already due to look), so a 20,000-token answer
        costs a few hundred wake-ups and no cross-thread Qt signal per token."""
        loop = asyncio.get_running_loop()
        items: collections.deque[Any] = collections.deque()
        reader, writer = socket.socketpair()
        reader.setblocking(False)
        writer.setblocking(False)
        due = [False]  # the loop will look at `items` soon
        ready = asyncio.Event()

        def wake() -> None:
            if not due[0]:
                due[0] = True
                with contextlib.suppress(BlockingIOError, OSError):
                    writer.send(b"!")

        def readable() -> None:
            with contextlib.suppress(BlockingIOError, OSError):
                reader.recv(4096)
            due[0] = False  # before draining: an item added from now on wakes us again
            ready.set()

        def done() -> None:
            items.append(_END)
            due[0] = False
            wake()

        self._channel = (items, wake)
        loop.add_reader(reader.fileno(), readable)
        future = loop.run_in_executor(self._pool, _pump, make, items, wake, done)
        try:
            finished = False
            while not finished:
                await ready.wait()
                ready.clear()
                while items:
                    item = items.popleft()
                    if item is _END:
                        finished = True
                        break
                    if isinstance(item, _Ask):
                        item.start()
                        continue
                    yield item
            await future
        finally:
            self._channel = None
            loop.remove_reader(reader.fileno())
            reader.close()
            writer.close()

    def ask(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> T:
        """From the engine thread: run `coro` on the loop and wait for its answer. During a
        stream the request travels in order with the stream's items, so the loop has seen
        every event produced before it (the tool call a request is about)."""
        channel = self._channel
        if channel is None:
            return asyncio.run_coroutine_threadsafe(coro, loop).result()
        request: _Ask = _Ask(coro)
        channel[0].append(request)
        channel[1]()
        return request.answer.result()  # type: ignore[no-any-return]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


__all__ = ["EngineBridge", "StreamCrashed"]
