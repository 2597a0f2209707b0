"""`WorkerClient` for asyncio code (the window's qasync loop): the same calls, awaitable.

The blocking pipe work runs in a helper thread; events come back through the loop, so the
loop never blocks. Closing the stream (`async with contextlib.aclosing(stream)`, or cancelling
the consuming task) cancels the generation, and the worker stays ready.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

from app.domain.events import GenerationEvent
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.protocol import ModelInfo

_END = object()


class AsyncWorkerClient:
    """Awaitable facade over one `WorkerClient`."""

    def __init__(self, client: WorkerClient | None = None) -> None:
        self.client = client or WorkerClient()

    async def load(
        self,
        path: str | Path,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        on_progress: Callable[[float], None] | None = None,
    ) -> ModelInfo:
        loop = asyncio.get_running_loop()

        def progress(fraction: float) -> None:
            if on_progress is not None:
                loop.call_soon_threadsafe(on_progress, fraction)

        return await asyncio.to_thread(
            self.client.load, path, n_ctx=n_ctx, n_threads=n_threads, on_progress=progress
        )

    async def generate(
        self,
        prompt_ids: Sequence[int],
        *,
        stop_ids: Sequence[int],
        sampling: Sampling | None = None,
        max_tokens: int = 512,
    ) -> AsyncIterator[GenerationEvent]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        cancel = threading.Event()

        def pump() -> None:
            try:
                for event in self.client.generate(
                    prompt_ids,
                    stop_ids=stop_ids,
                    sampling=sampling,
                    max_tokens=max_tokens,
                    cancel=cancel,
                ):
                    loop.call_soon_threadsafe(queue.put_nowait, event)
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, _END)

        worker = loop.run_in_executor(None, pump)
        try:
            while (event := await queue.get()) is not _END:
                yield event  # type: ignore[misc]
        finally:
            cancel.set()
            await asyncio.shield(worker)

    async def close(self) -> None:
        await asyncio.to_thread(self.client.close)
