"""`n` > 1 on chat completions: several choices for one request, decoded side by side.

Guarantees: the request is read once; each choice is its own generation of the same `Asked`,
all sent to the model worker at once, so they run as parallel sequences and share the prompt's
cache (the worker evaluates it once and copies it: `app/engine/worker/scheduler.py`); with a
`seed`, choice i uses `seed + i`, so the choices differ and a repeated request gives the same
ones; the whole answer holds the choices in order with the prompt counted once in `usage`; a
stream interleaves the choices' chunks as they come, each with its `index`, all under one id;
a client that leaves stops them all; under summarise the first choice's prompt is compacted
before the others start, and they carry the same summary.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import JSONResponse, Response, StreamingResponse

from app.domain.budget import Overflow
from app.server.asked import Asked
from app.server.chat.completion import Shape, choice_chunks, usage_chunk, whole
from app.server.keepalive import COMMENT, kept_alive
from app.server.running import Disconnected, Running, start
from app.server.served import ServedModel

_DONE = object()


def seeded(asked: Asked, i: int) -> Asked:
    """What choice `i` asks: with a seed, `seed + i`."""
    sampling = asked.generation.sampling
    if sampling.seed is None:
        return asked
    generation = dataclasses.replace(
        asked.generation, sampling=dataclasses.replace(sampling, seed=sampling.seed + i)
    )
    return dataclasses.replace(asked, generation=generation)


def _usage(runs: list[Running]) -> dict[str, Any]:
    first = runs[0].answer.usage()
    prompt = first["prompt_tokens"]
    generated = sum(run.answer.usage()["completion_tokens"] for run in runs)
    total = prompt + generated
    said = {"prompt_tokens": prompt, "completion_tokens": generated, "total_tokens": total}
    return {**said, **({"compacted": first["compacted"]} if "compacted" in first else {})}


async def _started(
    served: ServedModel, asked: Asked, n: int, disconnected: Disconnected
) -> list[Running]:
    """The `n` choices' answers, started together; under summarise the first alone until its
    prompt is fitted, so that the others reuse the compaction it made, not make their own."""
    runs = []
    if asked.generation.overflow is Overflow.SUMMARISE:
        runs.append(await start(served, asked, disconnected))
    rest = range(len(runs), n)
    runs += await asyncio.gather(*(start(served, seeded(asked, i), disconnected) for i in rest))
    return runs


async def choices(
    served: ServedModel,
    asked: Asked,
    shape: Shape,
    n: int,
    stream: bool,
    disconnected: Disconnected,
    note: str | None = None,
) -> Response:
    """The answer to a chat request with `n` choices (see the guarantees); `note` is said in
    the warning header beside what the first choice's says."""
    runs = await _started(served, asked, n, disconnected)
    warned = runs[0].headers(note)
    if stream:
        for run in runs:
            run.watcher.cancel()
        return StreamingResponse(
            kept_alive(_stream(runs, shape), COMMENT),
            media_type="text/event-stream",
            headers=warned,
        )
    await asyncio.gather(*(run.drain() for run in runs))
    wholes = [whole(run, shape) for run in runs]
    listed = [{**said["choices"][0], "index": i} for i, said in enumerate(wholes)]
    return JSONResponse({**wholes[0], "choices": listed, "usage": _usage(runs)}, headers=warned)


async def _stream(runs: list[Running], shape: Shape) -> AsyncIterator[bytes]:
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def pump(run: Running, index: int) -> None:
        try:
            async for chunk in choice_chunks(run, shape, index):
                await queue.put(chunk)
        finally:
            await queue.put(_DONE)

    tasks = [asyncio.ensure_future(pump(run, i)) for i, run in enumerate(runs)]
    try:
        left = len(runs)
        while left:
            item = await queue.get()
            if item is _DONE:
                left -= 1
            else:
                yield item
        if shape.usage:
            yield usage_chunk(shape.head, _usage(runs))
        yield b"data: [DONE]\n\n"
    finally:
        for task in tasks:
            task.cancel()  # a client that left: every choice's generation stops


__all__ = ["choices", "seeded"]
