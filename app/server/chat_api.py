"""`POST /v1/chat/completions` (and Databricks' chat invocations): one request, one answer, whole
or streamed as server-sent events.

Guarantees: the reasoning is in `reasoning_content` (or `reasoning`, as the request's
`reasoning_format` or the server's setting asks), never in `content`; `finish_reason` is
`tool_calls`, `stop` or `length`; streamed chunks carry the same text the whole answer would,
with usage last when `stream_options.include_usage` asks; a request whose client disconnects
stops its generation (or never starts it, if it was still waiting); every problem found before
the first byte is an error in OpenAI's shape with its status.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.responses import JSONResponse, Response, StreamingResponse

from app.server.answer import Answer, Piece, dumps, job
from app.server.convert import asked
from app.server.served import ServedModel, on_engine
from app.server.wire import ApiError, ChatRequest, ReasoningField, parse

Disconnected = Callable[[], Awaitable[bool]]


def _event(data: Any) -> bytes:
    return f"data: {dumps(data)}\n\n".encode()


async def watch(disconnected: Disconnected, cancel: threading.Event) -> None:
    """Set `cancel` once the client has gone (for answers that are not streamed)."""
    while not cancel.is_set():
        if await disconnected():
            cancel.set()
            return
        await asyncio.sleep(0.2)


async def first_of(events: AsyncIterator[Any]) -> list[Any]:
    """The first item (so errors found before generating are answered as errors)."""
    try:
        return [await anext(events)]
    except StopAsyncIteration:
        return []


class ChatApi:
    """See the module guarantees."""

    def __init__(
        self,
        served: ServedModel,
        harmony: bool,
        reasoning: ReasoningField,
        limit: int,
        thinking_budget: int | None = None,
    ) -> None:
        self.thinking_budget = thinking_budget
        self.served, self.harmony, self.reasoning_field, self.limit = (
            served,
            harmony,
            reasoning,
            limit,
        )

    async def __call__(self, body: Any, disconnected: Disconnected) -> Response:
        request: ChatRequest = parse(ChatRequest, body)
        what = asked(request, self.harmony, request.thinking_budget or self.thinking_budget)
        cancel = threading.Event()
        top = (request.top_logprobs or 0) if request.logprobs else 0
        scoring = max(top, 1) if request.logprobs else 0
        make = job(self.served, what, request, self.limit, scoring, cancel)
        events = on_engine(self.served.engine, make, cancel, self.served.stats)
        answer = Answer(request.stops, cancel)
        field = request.reasoning_format or self.reasoning_field
        ident, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        head = {"id": ident, "created": created, "model": self.served.name}
        watcher = asyncio.ensure_future(watch(disconnected, cancel))
        try:
            first = await first_of(events)
        except BaseException:
            watcher.cancel()
            raise
        if request.stream:
            watcher.cancel()  # a streamed answer learns of a gone client from its writes
            chunks = self._chunks(first, events, answer, head, field, request, top)
            return StreamingResponse(chunks, media_type="text/event-stream")
        try:
            for item in first:
                answer.feed(item)
            async for item in events:
                answer.feed(item)
        finally:
            watcher.cancel()
        answer.flush()
        return JSONResponse(self.whole(answer, head, field, request, top))

    def whole(
        self, answer: Answer, head: dict[str, Any], field: str, request: ChatRequest, top: int
    ) -> dict[str, Any]:
        if answer.failed is not None and not (answer.content or answer.calls):
            raise ApiError(
                503, f"the model stopped: {answer.failed}", type="server_error", code="model_failed"
            )
        message: dict[str, Any] = {"role": "assistant", "content": answer.content or None}
        if answer.reasoning:
            message[field] = answer.reasoning
        if answer.calls:
            message["tool_calls"] = answer.calls
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "finish_reason": answer.finish_reason,
            "logprobs": answer.logprobs(answer.scored) if request.logprobs else None,
        }
        if top == 0 and request.logprobs:
            for entry in choice["logprobs"]["content"]:
                entry["top_logprobs"] = []
        return {**head, "object": "chat.completion", "choices": [choice], "usage": answer.usage()}

    async def _chunks(
        self,
        first: list[Any],
        events: AsyncIterator[Any],
        answer: Answer,
        head: dict[str, Any],
        field: str,
        request: ChatRequest,
        top: int,
    ) -> AsyncIterator[bytes]:
        def chunk(delta: dict[str, Any], finish: str | None = None, logprobs: Any = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": logprobs}
            return _event({**head, "object": "chat.completion.chunk", "choices": [choice]})

        yield chunk({"role": "assistant", "content": ""})
        calls = 0

        def said(piece: Piece) -> list[bytes]:
            nonlocal calls
            out = []
            if piece.reasoning:
                out.append(chunk({field: piece.reasoning}))
            if piece.content:
                scored = answer.logprobs(piece.scored) if request.logprobs else None
                if scored is not None and top == 0:
                    for entry in scored["content"]:
                        entry["top_logprobs"] = []
                out.append(chunk({"content": piece.content}, logprobs=scored))
            for call in piece.calls:
                out.append(chunk({"tool_calls": [{"index": calls, **call}]}))
                calls += 1
            return out

        try:
            for item in first:
                for data in said(answer.feed(item)):
                    yield data
            async for item in events:
                for data in said(answer.feed(item)):
                    yield data
        except ApiError as exc:  # after the first byte: said in the stream
            yield _event(exc.body())
        finally:
            answer.cut.cancel.set()  # the client left (this generator was closed): stop
        held = answer.flush()
        if held:
            yield chunk({"content": held})
        if answer.failed is not None:
            yield _event(
                {
                    "error": {
                        "message": f"the model stopped: {answer.failed}",
                        "type": "server_error",
                        "param": None,
                        "code": "model_failed",
                    }
                }
            )
        yield chunk({}, finish=answer.finish_reason)
        if request.stream_options is not None and request.stream_options.include_usage:
            yield _event(
                {**head, "object": "chat.completion.chunk", "choices": [], "usage": answer.usage()}
            )
        yield b"data: [DONE]\n\n"


__all__ = ["ChatApi", "Disconnected", "first_of", "watch"]
