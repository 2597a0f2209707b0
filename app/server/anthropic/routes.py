"""`POST /v1/messages` and `/v1/messages/count_tokens`: Anthropic's Messages API (also without
`/v1`).

Guarantees: a Messages request is read once (`wire`) and converted straight into the app's own
`Asked` (`convert`: no other API's body in between), so it is answered by the same turn driver,
parser and reply builder as every other API (`app/server/running.py`), its pieces folded into
content blocks (`blocks`); a stream's events (`message_start`, `ping`, the blocks' events,
`message_delta` with the stop reason and usage, `message_stop`) add up to the whole message;
`count_tokens` counts the very prompt ids a request renders (with images, on the prompt the
projector made of them: it is evaluated to know, so `message_start` of a stream, which comes
before that, counts each image as one token and `message_delta` says the real count), so the
usage's `input_tokens` and `cache_read_input_tokens` add up to it. The fields a request gives
that are not applied (`wire`) are named in the `X-Harmony-Desk-Warning` header of its answer,
streamed or whole, and of its count. Every error on these routes
(the guard's and the fallback's too) is Anthropic's `{"type": "error", "error": {"type",
"message"}}` with its status, the field at fault named in the message (`shape`); a prompt the
context cannot hold is a 400 `invalid_request_error` whose message starts as Anthropic's does,
"prompt is too long: M tokens > N maximum" (what Claude Code's auto-compact reads), streamed or
not; one found after the first byte of a stream is an `error` event that ends it.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from app.domain.events import GenerationDone, PromptRendered, TurnFailed
from app.domain.messages import Conversation
from app.engine.request import GenerationRequest
from app.engine.session import ModelSession
from app.server.anthropic.blocks import Blocks, sse, stop_of, usage_of
from app.server.anthropic.convert import asked
from app.server.anthropic.wire import CountRequest, MessagesRequest
from app.server.asked import Asked, Target, off_loop
from app.server.errors import ApiError, ContextTooLong, parse
from app.server.fleet import Fleet
from app.server.keepalive import kept_alive
from app.server.options import ServeOptions
from app.server.routing import Routes, body_of
from app.server.running import Running, start, stopped, warnings
from app.server.served import ServedModel, on_engine

PATHS = ("/v1/messages", "/messages")
COUNT_PATHS = ("/v1/messages/count_tokens", "/messages/count_tokens")
_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
}


def error_body(status: int, message: str) -> dict[str, Any]:
    """An error in Anthropic's shape, its type from its status."""
    kind = _TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def shape(error: ApiError) -> dict[str, Any]:
    """`error` in Anthropic's shape, which has no field for the field at fault: it is named in
    the message; a prompt too long is said as Anthropic says it ("prompt is too long: ...")."""
    if isinstance(error, ContextTooLong):
        return error_body(error.status, error.anthropic())
    message, param = error.message, error.param
    if param and param not in message:
        message = f"{param}: {message}"
    return error_body(error.status, message)


class MessagesRoute:
    """The Messages endpoints of the models served (see the module guarantees)."""

    def __init__(self, fleet: Fleet, options: ServeOptions) -> None:
        self.fleet, self.options = fleet, options

    async def _asked(self, request: CountRequest) -> tuple[ServedModel, Asked]:
        served = await self.fleet.claim(request.model)
        target = Target.of(served, self.options)
        return served, await off_loop(partial(asked, request, target), request.has_images)

    async def messages(self, request: Request) -> Response:
        asked_for = parse(MessagesRequest, body_of(request))
        served, what = await self._asked(asked_for)
        run = await start(served, what, request.is_disconnected)
        head = {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": served.name,
        }
        blocks = Blocks(asked_for.thinks)
        if asked_for.stream:
            prompt = await _prompt_size(run)
            run.watcher.cancel()  # a streamed answer learns of a gone client from its writes
            stream = kept_alive(_events(run, head, blocks, prompt), sse("ping"))
            return StreamingResponse(stream, media_type="text/event-stream", headers=run.headers())
        async for piece in run.pieces():
            blocks.feed(piece)
        blocks.close()
        failure = run.failure()
        if failure is not None:
            raise failure
        stop, sequence = stop_of(run.answer)
        whole = {
            **head,
            "content": blocks.content,
            "stop_reason": stop,
            "stop_sequence": sequence,
            "usage": usage_of(run.answer),
        }
        return JSONResponse(whole, headers=run.headers(run.answer.problem()))

    async def count_tokens(self, request: Request) -> Response:
        """`{"input_tokens": N}`: the prompt a request with this body would render."""
        counted = parse(CountRequest, body_of(request))
        served, asked = await self._asked(counted)
        conversation, tenant = asked.conversation, asked.generation.tenant

        def make() -> Any:
            session = served.session()
            if any(m.images for m in conversation.messages):
                yield _evaluated(session, conversation, tenant)
            else:
                yield session.prompt_size(conversation)

        counts = on_engine(served.engine, make, threading.Event(), served.stats)
        sizes = [n async for batch in counts for n in batch]
        return JSONResponse({"input_tokens": sizes[0]}, headers=warnings(asked.ignored))


async def _events(
    run: Running, head: dict[str, Any], blocks: Blocks, prompt: int
) -> AsyncIterator[bytes]:
    usage = {"input_tokens": prompt, "output_tokens": 0}
    started = {**head, "content": [], "stop_reason": None, "stop_sequence": None}
    yield sse("message_start", message={**started, "usage": usage})
    yield sse("ping")
    try:
        async for piece in run.pieces():
            for said in blocks.feed(piece):
                yield said
    except ApiError as exc:  # after the first byte: said in the stream, which ends
        yield sse("error", error=error_body(exc.status, exc.message)["error"])
        return
    for said in blocks.close():
        yield said
    if run.answer.failed is not None:
        yield sse("error", error=error_body(503, stopped(run.answer.failed).message)["error"])
        return
    stop, sequence = stop_of(run.answer)
    delta = {"stop_reason": stop, "stop_sequence": sequence}
    yield sse("message_delta", delta=delta, usage=usage_of(run.answer))
    yield sse("message_stop")


def _evaluated(session: ModelSession, conversation: Conversation, tenant: str) -> int:
    """The tokens of a prompt with images, as the projector makes them: known only once it has
    read them, so the prompt is evaluated (one token generated; the KV cache keeps the prompt
    for the request that follows)."""
    for event in session.generate(conversation, GenerationRequest(max_tokens=1, tenant=tenant)):
        if isinstance(event, TurnFailed):
            raise ApiError(400, event.reason, param="messages")
        if isinstance(event, GenerationDone):
            return event.timings.prompt_tokens
    return 0


async def _prompt_size(run: Running) -> int:
    """The tokens of the prompt the answer is generated from (read ahead to its rendering,
    which comes before the first token)."""
    while True:
        for batch in run.first:
            for item in batch:
                if isinstance(item, PromptRendered):
                    return len(item.ids)
        try:
            run.first.append(await anext(run.events))
        except StopAsyncIteration:
            return 0


def attach(routes: Routes, fleet: Fleet, options: ServeOptions) -> None:
    """Add the Messages routes of `fleet`'s models to `routes`, their errors in Anthropic's
    shape."""
    api = MessagesRoute(fleet, options)
    routes.post(PATHS, api.messages, shape)
    routes.post(COUNT_PATHS, api.count_tokens, shape)


__all__ = ["COUNT_PATHS", "PATHS", "MessagesRoute", "attach", "error_body", "shape"]
