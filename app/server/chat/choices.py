"""`n` > 1 on chat completions: several choices for one request, decoded side by side.

Guarantees: each choice is its own generation, all sent to the model worker at once, so they
run as parallel sequences and share the prompt's cache (the worker evaluates it once and
copies it: `app/engine/worker/scheduler.py`); with a `seed`, choice i uses `seed + i`, so the
choices differ and a repeated request gives the same ones; the whole answer holds the choices
in order with the prompt counted once in `usage`; a stream interleaves the choices' chunks as
they come, each with its `index`, all under one id; a client that leaves stops them all.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import JSONResponse, Response, StreamingResponse

from app.server.chat_api import ChatApi, Disconnected, Running, usage_chunk, warnings
from app.server.wire import ChatRequest, parse

_DONE = object()


def _usage(runs: list[Running]) -> dict[str, int]:
    prompt = runs[0].answer.usage()["prompt_tokens"]
    generated = sum(run.answer.usage()["completion_tokens"] for run in runs)
    total = prompt + generated
    return {"prompt_tokens": prompt, "completion_tokens": generated, "total_tokens": total}


async def answer(api: ChatApi, body: Any, disconnected: Disconnected) -> Response:
    """A chat request's answer: one choice, or `n` of them side by side."""
    wanted = parse(ChatRequest, body).n
    if wanted > 1:
        return await choices(api, body, wanted, disconnected)
    return await api(body, disconnected)


async def choices(
    api: ChatApi, body: dict[str, Any], n: int, disconnected: Disconnected
) -> Response:
    """The answer to a chat request with `n` choices (see the guarantees)."""
    seed = body.get("seed")
    bodies = [
        {**body, "n": 1, **({"seed": seed + i} if isinstance(seed, int) else {})} for i in range(n)
    ]
    runs = list(await asyncio.gather(*(api.start(b, disconnected) for b in bodies)))
    for run in runs[1:]:
        run.head = runs[0].head  # one id for the answer
    warned = warnings(runs[0].ignored(), runs[0].fitted())
    if runs[0].request.stream:
        for run in runs:
            run.watcher.cancel()
        return StreamingResponse(_stream(api, runs), media_type="text/event-stream", headers=warned)
    await asyncio.gather(*(_drain(run) for run in runs))
    wholes = [api.whole(run) for run in runs]
    listed = [{**whole["choices"][0], "index": i} for i, whole in enumerate(wholes)]
    return JSONResponse({**wholes[0], "choices": listed, "usage": _usage(runs)}, headers=warned)


async def _drain(run: Running) -> None:
    async for _ in run.pieces():
        pass


async def _stream(api: ChatApi, runs: list[Running]) -> AsyncIterator[bytes]:
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def pump(run: Running, index: int) -> None:
        try:
            async for chunk in api.choice_chunks(run, index):
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
        options = runs[0].request.stream_options
        if options is not None and options.include_usage:
            yield usage_chunk(runs[0].head, _usage(runs))
        yield b"data: [DONE]\n\n"
    finally:
        for task in tasks:
            task.cancel()  # a client that left: every choice's generation stops
