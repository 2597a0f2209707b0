"""A chat answer written as OpenAI's `chat.completion`, or streamed as its chunks.

Guarantees: the answer's text is `message.content`, its reasoning goes in the field the request
or the server names (`reasoning_content` or `reasoning`, never in the content), its calls are
`tool_calls`; a stream begins with the role, sends each piece as it comes (reasoning, content
with its log-probabilities, each call with its index), ends with the finish reason, a usage
chunk when `stream_options.include_usage` asked, and `[DONE]`; an error found after the first
byte is said in the stream as an error object; a model that stopped before answering anything
is a 503 `model_failed`. Whole answers and chunks have the fields OpenAI's published schema
requires (`message.refusal` null, `logprobs.refusal`, a `system_fingerprint` that is the same
for one model on one app version; checked against the schema in `tests/server/test_schema.py`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from app.server.answer import Scored
from app.server.chat.wire import ChatRequest
from app.server.errors import ApiError
from app.server.options import ReasoningField
from app.server.running import Running, event, fingerprint, stopped


@dataclass(frozen=True)
class Shape:
    """How one request's answer is written: its head (id, time, model, fingerprint), the field
    its reasoning goes in, the alternatives per scored token (None: no log-probabilities) and
    whether a stream ends with its usage."""

    head: dict[str, Any]
    field: str
    top: int | None
    usage: bool

    @classmethod
    def of(cls, request: ChatRequest, model: str, field: ReasoningField) -> Shape:
        head = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": fingerprint(model),
        }
        top = (request.top_logprobs or 0) if request.logprobs else None
        return cls(head, request.reasoning_format or field, top, request.include_usage)

    def logprobs(self, run: Running, scored: list[Scored]) -> Any:
        if self.top is None:
            return None
        said = run.answer.logprobs(scored)
        if self.top == 0:
            for entry in said["content"]:
                entry["top_logprobs"] = []
        return said


def whole(run: Running, shape: Shape) -> dict[str, Any]:
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
        message[shape.field] = answer.reasoning
    if answer.calls:
        message["tool_calls"] = answer.calls
    choice = {
        "index": 0,
        "message": message,
        "finish_reason": answer.finish_reason,
        "logprobs": shape.logprobs(run, answer.scored),
    }
    return {**shape.head, "object": "chat.completion", "choices": [choice], "usage": answer.usage()}


async def chunks(run: Running, shape: Shape) -> AsyncIterator[bytes]:
    """The stream of one choice's answer."""
    async for chunk in choice_chunks(run, shape, 0):
        yield chunk
    if shape.usage:
        yield usage_chunk(shape.head, run.answer.usage())
    yield b"data: [DONE]\n\n"


async def choice_chunks(run: Running, shape: Shape, index: int) -> AsyncIterator[bytes]:
    """One choice's streamed chunks, from its role to its finish reason."""

    def chunk(delta: dict[str, Any], finish: str | None = None, logprobs: Any = None) -> bytes:
        choice = {"index": index, "delta": delta, "finish_reason": finish, "logprobs": logprobs}
        return event({**shape.head, "object": "chat.completion.chunk", "choices": [choice]})

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    calls = 0
    try:
        async for piece in run.pieces():
            if piece.reasoning:
                yield chunk({shape.field: piece.reasoning})
            if piece.content:
                yield chunk({"content": piece.content}, logprobs=shape.logprobs(run, piece.scored))
            for call in piece.calls:
                yield chunk({"tool_calls": [{"index": calls, **call}]})
                calls += 1
    except ApiError as exc:  # after the first byte: said in the stream
        yield event(exc.body())
    if run.answer.failed is not None:
        yield event(stopped(run.answer.failed).body())
    yield chunk({}, finish=run.answer.finish_reason)


def usage_chunk(head: dict[str, Any], usage: dict[str, Any]) -> bytes:
    """The last chunk of a stream whose request asked for its usage."""
    return event({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})


__all__ = ["Shape", "choice_chunks", "chunks", "usage_chunk", "whole"]
