"""A streamed answer kept alive while the model reads a long prompt.

Guarantees: `kept_alive` yields what `stream` yields, in order and unchanged, and `beat` each
time `every` seconds pass with nothing from it — while a prompt of tens of thousands of tokens is
read, before the first token, a client whose stream watchdog gives up on a silent connection
(Claude Code's, after 300 s without a byte) keeps waiting, as on Anthropic's API, whose streams
carry `ping` events. A beat is a no-op to every client of its API: Anthropic's `ping` event; an
SSE comment line for OpenAI's streams, which their clients skip. Closing the kept-alive stream
(its client left) cancels the read under way and closes `stream`, so its generation stops as it
would without the beats.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

BEAT_SECONDS = 15.0
COMMENT = b": keep-alive\n\n"  # an SSE comment: OpenAI's streams


async def kept_alive(
    stream: AsyncIterator[bytes], beat: bytes, every: float | None = None
) -> AsyncIterator[bytes]:
    """`stream`, with `beat` after each `every` seconds of silence (None: `BEAT_SECONDS`)."""
    every = BEAT_SECONDS if every is None else every
    pending: asyncio.Future[bytes | None] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(_next(stream))
            done, _ = await asyncio.wait({pending}, timeout=every)
            if not done:
                yield beat
                continue
            read, pending = pending.result(), None
            if read is None:
                return
            yield read
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
        closing: Any = getattr(stream, "aclose", None)
        if closing is not None:
            await closing()


async def _next(stream: AsyncIterator[bytes]) -> bytes | None:
    """The stream's next bytes; None at its end."""
    try:
        return await anext(stream)
    except StopAsyncIteration:
        return None


__all__ = ["BEAT_SECONDS", "COMMENT", "kept_alive"]
