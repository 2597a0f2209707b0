"""`POST /v1/completions`: a raw prompt continued, whole or streamed (also at llama-server's
unprefixed path and Databricks' SDK path).

Guarantees: the prompt is the client's own text, tokenized as it is — control tokens it
spells are control tokens (a raw prompt is the client's to shape; the chat endpoints never do
this); `echo` puts the prompt before the text; `suffix` is not supported and says so in an
`X-Harmony-Desk-Warning` header, never silently; a stop sequence ends the text before it; one
prompt per request (a list of several is a 400); a prompt the context cannot hold is a 400
`context_length_exceeded` whose message gives the counts as OpenAI's completions do.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from app.domain.events import GenerationDone
from app.engine.request import GenerationRequest
from app.engine.session import ModelSession
from app.errors import ContextError
from app.server.answer import StopCut, finish_of, usage_of
from app.server.asked import Target
from app.server.completions.convert import generation_of, prompt_of
from app.server.completions.wire import CompletionRequest
from app.server.errors import ContextTooLong, parse
from app.server.fleet import Fleet
from app.server.keepalive import COMMENT, kept_alive
from app.server.options import ServeOptions
from app.server.routing import Routes, body_of
from app.server.running import event, fingerprint, first_of, warnings
from app.server.served import ServedModel, on_engine

PATHS = (
    "/v1/completions",
    "/completions",  # llama-server's unprefixed path
    "/serving-endpoints/completions",  # Databricks through the openai SDK
)


class Text:
    """A completion's text as it grows, cut at the first stop sequence."""

    def __init__(self, stops: tuple[str, ...], cancel: threading.Event) -> None:
        self.cut = StopCut(list(stops), cancel)
        self.text = ""
        self.done: GenerationDone | None = None

    def feed_all(self, items: list[Any]) -> str:
        return "".join(self.feed(item) for item in items)

    def feed(self, item: Any) -> str:
        if isinstance(item, GenerationDone):
            self.done = item
            return ""
        shown = self.cut.take(item) if isinstance(item, str) else ""
        self.text += shown
        return shown

    def flush(self) -> str:
        held = self.cut.flush()
        self.text += held
        return held

    @property
    def finish_reason(self) -> str:
        return finish_of(self.done, self.cut.stopped)

    def usage(self) -> dict[str, Any]:
        return usage_of(self.done)


class CompletionsRoute:
    """The completions endpoint of the models served (see the module guarantees)."""

    def __init__(self, fleet: Fleet, options: ServeOptions) -> None:
        self.fleet, self.options = fleet, options

    def _job(
        self,
        served: ServedModel,
        prompt: str,
        generation: GenerationRequest,
        cancel: threading.Event,
    ) -> Any:
        def make() -> Iterator[Any]:
            session = served.session()
            try:
                yield from session.complete(prompt, generation, cancel)
            except ContextError:
                raise _too_long(session, prompt, generation) from None

        return make

    async def __call__(self, request: Request) -> Response:
        asked_for: CompletionRequest = parse(CompletionRequest, body_of(request))
        served = await self.fleet.claim(asked_for.model)
        target = Target.of(served, self.options)
        prompt = prompt_of(asked_for)
        cancel = threading.Event()
        make = self._job(served, prompt, generation_of(asked_for, target), cancel)
        events = on_engine(served.engine, make, cancel, served.stats)
        warn = warnings(asked_for.ignored(), *target.clamped(asked_for.budget))
        head = {
            "id": f"cmpl-{uuid.uuid4().hex[:24]}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": served.name,
            "system_fingerprint": fingerprint(served.name),
        }
        text = Text(asked_for.stops, cancel)
        first, watcher = await first_of(events, request.is_disconnected, cancel)
        if asked_for.stream:
            watcher.cancel()
            stream = kept_alive(_chunks(first, events, text, head, asked_for, prompt), COMMENT)
            return StreamingResponse(stream, media_type="text/event-stream", headers=warn)
        try:
            for batch in first:
                text.feed_all(batch)
            async for batch in events:
                text.feed_all(batch)
        finally:
            watcher.cancel()
        shown = (prompt if asked_for.echo else "") + text.text + text.flush()
        choice = {"index": 0, "text": shown, "finish_reason": text.finish_reason, "logprobs": None}
        return JSONResponse({**head, "choices": [choice], "usage": text.usage()}, headers=warn)


def _too_long(session: ModelSession, prompt: str, generation: GenerationRequest) -> ContextTooLong:
    """The 400 for a raw prompt the context cannot hold, with the counts (the prompt counted
    as text: the refusal said it does not fit, not by how much)."""
    n_ctx, asked = session.n_ctx, generation.max_tokens or session.max_tokens
    hint = f"Here the context holds {n_ctx} tokens: shorten the prompt."
    return ContextTooLong(
        max(session.count(prompt), n_ctx), n_ctx, asked, param="prompt", hint=hint
    )


async def _chunks(
    first: list[Any],
    events: AsyncIterator[Any],
    text: Text,
    head: dict[str, Any],
    request: CompletionRequest,
    prompt: str,
) -> AsyncIterator[bytes]:
    def chunk(piece: str, finish: str | None = None) -> bytes:
        choice = {"index": 0, "text": piece, "finish_reason": finish, "logprobs": None}
        return event({**head, "choices": [choice]})

    if request.echo:
        yield chunk(prompt)
    try:
        for batch in first:
            if piece := text.feed_all(batch):
                yield chunk(piece)
        async for batch in events:
            if piece := text.feed_all(batch):
                yield chunk(piece)
    finally:
        text.cut.cancel.set()  # the client left (this generator was closed): stop
    if held := text.flush():
        yield chunk(held)
    yield chunk("", text.finish_reason)
    if request.include_usage:
        yield event({**head, "choices": [], "usage": text.usage()})
    yield b"data: [DONE]\n\n"


def attach(routes: Routes, fleet: Fleet, options: ServeOptions) -> None:
    """Add the completions routes of `fleet`'s models to `routes`."""
    routes.post(PATHS, CompletionsRoute(fleet, options))


__all__ = ["PATHS", "CompletionsRoute", "Text", "attach"]
