"""`POST /v1/chat/completions` (and Databricks' chat invocations): one request, one answer, whole
or streamed as server-sent events.

Guarantees: the reasoning is in `reasoning_content` (or `reasoning`, as the request's
`reasoning_format` or the server's setting asks), never in `content`; the calls the template's
parser read — Harmony's or a plain-text family's — are `tool_calls`, and `finish_reason` is then
`tool_calls` (else `stop` or `length`); streamed chunks carry the same text the whole answer
would, with usage last when `stream_options.include_usage` asks; a request whose client
disconnects stops its generation (or never starts it, if it was still waiting); every problem
found before the first byte is an error in OpenAI's shape with its status; a whole answer whose
JSON (or a call's arguments) failed the app's check after generation — cut off by `max_tokens`,
say — says why in an `X-Harmony-Desk-Warning` header, as does a prompt the request's overflow
policy fitted to the context (what was left out or cut). Whole answers and chunks have the
fields OpenAI's published schema requires (`message.refusal` null, `logprobs.refusal`, a
`system_fingerprint` that is the same for one model on one app version; checked against the
schema in `tests/test_server_schema.py`). `Running` is the answer being made, which the
Responses API streams in its own events.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from starlette.responses import JSONResponse, Response, StreamingResponse

from app import __version__
from app.domain.budget import notice
from app.domain.events import ContextFit
from app.server.answer import Answer, Piece, dumps, job
from app.server.convert import Asked, Seeing, asked
from app.server.served import ServedModel, on_engine
from app.server.wire import ApiError, ChatRequest, ReasoningField, parse

Disconnected = Callable[[], Awaitable[bool]]


def fingerprint(model: str) -> str:
    """`system_fingerprint`: the same for every answer of one model on one app version."""
    said = hashlib.sha256(f"{model}\0{__version__}".encode()).hexdigest()
    return f"fp_{said[:10]}"


def event(data: Any) -> bytes:
    """One server-sent event of JSON."""
    return f"data: {dumps(data)}\n\n".encode()


async def watch(disconnected: Disconnected, cancel: threading.Event) -> None:
    """Set `cancel` once the client has gone (while waiting, and for answers not streamed)."""
    while not cancel.is_set():
        if await disconnected():
            cancel.set()
            return
        await asyncio.sleep(0.2)


async def first_of(
    events: AsyncIterator[Any], disconnected: Disconnected, cancel: threading.Event
) -> tuple[list[Any], asyncio.Future[None]]:
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


def warnings(ignored: list[str], *problems: str | None) -> dict[str, str]:
    """The `X-Harmony-Desk-Warning` header: fields not applied, what fitting the context left
    out or cut, and a failed JSON check."""
    said = [f"{', '.join(ignored)} {'is' if len(ignored) == 1 else 'are'} not supported: ignored"]
    said = (said if ignored else []) + [p for p in problems if p]
    if not said:
        return {}
    return {"X-Harmony-Desk-Warning": "; ".join(said).encode("ascii", "replace").decode()[:400]}


@dataclass
class Running:
    """An answer being made: its request, fold, first item and the rest to come."""

    request: ChatRequest
    answer: Answer
    first: list[Any]
    events: AsyncIterator[Any]
    watcher: asyncio.Future[None]
    head: dict[str, Any]
    field: str  # where the reasoning goes
    top: int  # alternatives per scored token
    unapplied: tuple[str, ...] = ()  # fields this model does not apply (a reasoning effort)

    def ignored(self) -> list[str]:
        """The request's fields that were not applied (said in the warning header)."""
        return [*self.request.ignored(), *self.unapplied]

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

    def logprobs(self, scored: Any) -> Any:
        if not self.request.logprobs:
            return None
        said = self.answer.logprobs(scored)
        if self.top == 0:
            for entry in said["content"]:
                entry["top_logprobs"] = []
        return said

    def fitted(self) -> str:
        """What the overflow policy left out of the prompt or cut ("" when nothing)."""
        for batch in self.first:
            for item in batch:
                if isinstance(item, ContextFit):
                    return notice(item.policy, item.exchanges, item.dropped, item.cuts)
        return ""

    def failure(self) -> ApiError | None:
        a = self.answer
        if a.failed is not None and not (a.content or a.calls):
            return ApiError(
                503, f"the model stopped: {a.failed}", type="server_error", code="model_failed"
            )
        return None


class ChatApi:
    """See the module guarantees."""

    def __init__(
        self,
        served: ServedModel,
        reasoning: ReasoningField,
        limit: int,
        thinking_budget: int | None = None,
    ) -> None:
        self.served, self.reasoning_field = served, reasoning
        self.limit, self.thinking_budget = limit, thinking_budget

    async def asked(self, request: ChatRequest, places: Mapping[str, str] | None = None) -> Asked:
        """What `request` asks of the served model (`convert.asked`); its images are decoded
        off the server's loop, which goes on serving others meanwhile."""
        s = self.served
        seeing = Seeing(s.sees_images, s.name, places or {})
        ask = partial(asked, request, s.template, s.name, self.limit, self.thinking_budget, seeing)
        return await asyncio.to_thread(ask) if request.has_images else ask()

    async def start(
        self, body: Any, disconnected: Disconnected, places: Mapping[str, str] | None = None
    ) -> Running:
        """Queue the answer to `body`; back once its first item is (errors raised here).
        `places` names its image parts as the client's own API spells them (for errors)."""
        request: ChatRequest = parse(ChatRequest, body)
        what = await self.asked(request, places)
        cancel = threading.Event()
        top = (request.top_logprobs or 0) if request.logprobs else 0
        make = job(self.served, what, cancel)
        events = on_engine(self.served.engine, make, cancel, self.served.stats)
        head = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "created": int(time.time()),
            "model": self.served.name,
            "system_fingerprint": fingerprint(self.served.name),
        }
        first, watcher = await first_of(events, disconnected, cancel)
        field = request.reasoning_format or self.reasoning_field
        held = (request.response_format or {}).get("type") in ("json_object", "json_schema")
        answer = Answer(list(what.generation.stops), cancel, hold_json=held)
        return Running(request, answer, first, events, watcher, head, field, top, what.ignored)

    async def __call__(self, body: Any, disconnected: Disconnected) -> Response:
        """One choice (`app/server/choices.py` answers a request for several)."""
        run = await self.start(body, disconnected)
        warned = warnings(run.ignored(), run.fitted())
        if run.request.stream:
            run.watcher.cancel()  # a streamed answer learns of a gone client from its writes
            stream = self._chunks(run)
            return StreamingResponse(stream, media_type="text/event-stream", headers=warned)
        async for _ in run.pieces():
            pass
        whole = self.whole(run)
        problem = run.answer.problem()  # a JSON answer or call that failed its check
        return JSONResponse(whole, headers=warnings(run.ignored(), run.fitted(), problem))

    def whole(self, run: Running) -> dict[str, Any]:
        """The whole answer as a `chat.completion`."""
        failure = run.failure()
        if failure is not None:
            raise failure
        answer = run.answer
        message: dict[str, Any] = {
            "role": "assistant",
            "content": answer.content or None,
            "refusal": None,  # a local model's refusal is its answer
        }
        if answer.reasoning:
            message[run.field] = answer.reasoning
        if answer.calls:
            message["tool_calls"] = answer.calls
        choice = {
            "index": 0,
            "message": message,
            "finish_reason": answer.finish_reason,
            "logprobs": run.logprobs(answer.scored),
        }
        return {
            **run.head,
            "object": "chat.completion",
            "choices": [choice],
            "usage": answer.usage(),
        }

    async def _chunks(self, run: Running) -> AsyncIterator[bytes]:
        async for chunk in self.choice_chunks(run, 0):
            yield chunk
        options = run.request.stream_options
        if options is not None and options.include_usage:
            yield usage_chunk(run.head, run.answer.usage())
        yield b"data: [DONE]\n\n"

    async def choice_chunks(self, run: Running, index: int) -> AsyncIterator[bytes]:
        """One choice's streamed chunks, from its role to its finish reason."""

        def chunk(delta: dict[str, Any], finish: str | None = None, logprobs: Any = None) -> bytes:
            choice = {"index": index, "delta": delta, "finish_reason": finish, "logprobs": logprobs}
            return event({**run.head, "object": "chat.completion.chunk", "choices": [choice]})

        yield chunk({"role": "assistant", "content": "", "refusal": None})
        calls = 0
        try:
            async for piece in run.pieces():
                if piece.reasoning:
                    yield chunk({run.field: piece.reasoning})
                if piece.content:
                    yield chunk({"content": piece.content}, logprobs=run.logprobs(piece.scored))
                for call in piece.calls:
                    yield chunk({"tool_calls": [{"index": calls, **call}]})
                    calls += 1
        except ApiError as exc:  # after the first byte: said in the stream
            yield event(exc.body())
        if run.answer.failed is not None:
            yield event(
                ApiError(
                    503,
                    f"the model stopped: {run.answer.failed}",
                    type="server_error",
                    code="model_failed",
                ).body()
            )
        yield chunk({}, finish=run.answer.finish_reason)


def usage_chunk(head: dict[str, Any], usage: dict[str, Any]) -> bytes:
    """The last chunk of a stream whose request asked for its usage."""
    return event({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})


__all__ = [
    "ChatApi",
    "Disconnected",
    "Running",
    "event",
    "fingerprint",
    "first_of",
    "usage_chunk",
    "warnings",
    "watch",
]
