"""An answer being made: what one `Asked` becomes on the engine, whichever API asked it.

Guarantees: the turn is queued as one job on the engine (`answer.job`, through `run_turn`) and
`start` returns once the prompt is fitted (its `ContextFit` has come: after a compaction, if one
was due) or the turn ended, so a problem found before generating (a prompt too long, a schema
refused) is raised as the request's error, not written into a stream, and every header is known
before the first byte; a
client that leaves while its job waits or runs stops it (`watch`, and the consumer that stops
early); every API folds the same items with the same `Answer`, so what a client gets is what
the window shows for the same tokens; a JSON-mode answer is held until its verdict; the
`X-Harmony-Desk-Warning` header says which fields were not applied, what fitting the context
left out or cut, a compaction that could not be made, and a JSON answer or call that failed
its check after generation; the `X-Harmony-Desk-Compacted` header says the summary the prompt
carries (made for this request, or a kept one reused: `app/server/compactions.py`).
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from app import __version__
from app.domain.budget import notice
from app.domain.events import Compacted, ContextFit, ParseIssue, TurnFailed
from app.errors import ErrorCode
from app.server import compactions
from app.server.answer import Answer, Item, Piece, dumps, job
from app.server.asked import Asked
from app.server.compactions import Reused
from app.server.errors import ApiError
from app.server.served import ServedModel, on_engine

Disconnected = Callable[[], Awaitable[bool]]


T = TypeVar("T")


def fingerprint(model: str) -> str:
    """`system_fingerprint`: the same for every answer of one model on one app version."""
    said = hashlib.sha256(f"{model}\0{__version__}".encode()).hexdigest()
    return f"fp_{said[:10]}"


def event(data: Any) -> bytes:
    """One server-sent event of JSON (OpenAI's streams)."""
    return f"data: {dumps(data)}\n\n".encode()


async def watch(disconnected: Disconnected, cancel: threading.Event) -> None:
    """Set `cancel` once the client has gone (while waiting, and for answers not streamed)."""
    while not cancel.is_set():
        if await disconnected():
            cancel.set()
            return
        await asyncio.sleep(0.2)


async def first_of(
    events: AsyncIterator[T], disconnected: Disconnected, cancel: threading.Event
) -> tuple[list[T], asyncio.Future[None]]:
    """The first item (so errors found before generating are answered as errors), and the
    watcher that sets `cancel` if the client leaves (while the job waits its turn, too)."""
    watcher = asyncio.ensure_future(watch(disconnected, cancel))
    try:
        return [await anext(events)], watcher
    except StopAsyncIteration:
        return [], watcher
    except BaseException:
        watcher.cancel()
        raise


def warnings(ignored: Sequence[str], *problems: str | None) -> dict[str, str]:
    """The `X-Harmony-Desk-Warning` header: fields not applied, what fitting the context left
    out or cut, and a failed JSON check."""
    said = [f"{', '.join(ignored)} {'is' if len(ignored) == 1 else 'are'} not supported: ignored"]
    said = (said if ignored else []) + [p for p in problems if p]
    if not said:
        return {}
    return {"X-Harmony-Desk-Warning": "; ".join(said).encode("ascii", "replace").decode()[:400]}


@dataclass
class Running:
    """An answer being made: its fold, first item and the rest to come."""

    answer: Answer
    first: list[list[Item]]
    events: AsyncIterator[list[Item]]
    watcher: asyncio.Future[None]
    ignored: tuple[str, ...] = ()  # the request's fields that were not applied
    notes: tuple[str, ...] = ()  # what was taken otherwise than asked (a clamped max_tokens)

    async def pieces(self) -> AsyncIterator[Piece]:
        """What each batch of items adds, then what was held back; the generation stops if
        the consumer stops early (its client left)."""
        try:
            for batch in self.first:
                yield self.answer.feed_all(batch)
            async for batch in self.events:
                yield self.answer.feed_all(batch)
        finally:
            self.answer.cut.cancel.set()
            self.watcher.cancel()
        held = self.answer.flush()
        if held:
            yield Piece(content=held)

    async def drain(self) -> None:
        """The whole answer, folded (for one not streamed)."""
        async for _ in self.pieces():
            pass

    def fitted(self) -> str:
        """What the overflow policy left out of the prompt or cut ("" when nothing)."""
        for batch in self.first:
            for item in batch:
                if isinstance(item, ContextFit):
                    return notice(item.policy, item.exchanges, item.dropped, item.cuts)
        return ""

    def compacted(self) -> dict[str, str]:
        """The `X-Harmony-Desk-Compacted` header: the summary the prompt carries (none: {})."""
        for batch in self.first:
            for item in batch:
                if isinstance(item, Compacted):
                    return {compactions.HEADER: compactions.said(item.compaction, False)}
                if isinstance(item, Reused):
                    return {compactions.HEADER: compactions.said(item.compaction, True)}
        return {}

    def not_compacted(self) -> str:
        """Why a compaction that was due was not made ("" when none failed)."""
        for batch in self.first:
            for item in batch:
                if isinstance(item, ParseIssue) and item.code is ErrorCode.CONTEXT:
                    return item.message
        return ""

    def failure(self) -> ApiError | None:
        """The 503 of a model that stopped before it answered anything."""
        a = self.answer
        if a.failed is not None and not (a.content or a.calls):
            return stopped(a.failed)
        return None

    def headers(self, problem: str | None = None) -> dict[str, str]:
        """The warning header of this answer (`problem`: what its JSON check found)."""
        said = warnings(self.ignored, *self.notes, self.not_compacted(), self.fitted(), problem)
        return {**said, **self.compacted()}


def _fitted(batches: list[list[Item]]) -> bool:
    """Whether the prompt was fitted (or the turn failed before it was)."""
    return any(isinstance(i, ContextFit | TurnFailed) for batch in batches for i in batch)


def stopped(reason: str) -> ApiError:
    """The error of a model that stopped: said as the answer, or in a stream after it began."""
    return ApiError(503, f"the model stopped: {reason}", type="server_error", code="model_failed")


async def start(served: ServedModel, asked: Asked, disconnected: Disconnected) -> Running:
    """Queue the answer to `asked`; back once its first item is (errors raised here)."""
    cancel = threading.Event()
    events = on_engine(served.engine, job(served, asked, cancel), cancel, served.stats)
    first, watcher = await first_of(events, disconnected, cancel)
    try:
        while first and not _fitted(first):  # a compaction first, say: its summary is made
            first.append(await anext(events))
    except StopAsyncIteration:
        pass
    except BaseException:
        watcher.cancel()
        raise
    form = asked.generation.response_format
    held = form is not None and form.type in ("json_object", "json_schema")
    answer = Answer(list(asked.generation.stops), cancel, hold_json=held)
    return Running(answer, first, events, watcher, asked.ignored, asked.notes)


__all__ = [
    "Disconnected",
    "Running",
    "event",
    "fingerprint",
    "first_of",
    "start",
    "stopped",
    "warnings",
    "watch",
]
