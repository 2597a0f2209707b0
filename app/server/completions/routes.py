"""`POST /v1/completions`: a raw prompt continued, whole or streamed.

Guarantees: the prompt is the client's own text, tokenized as it is — control tokens it
spells are control tokens (a raw prompt is the client's to shape; the chat endpoints never do
this); `echo` puts the prompt before the text; `suffix` is not supported and says so in an
`X-Harmony-Desk-Warning` header, never silently; a stop sequence ends the text before it; one
prompt per request (a list of several is a 400); the same context check as chat.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

from starlette.responses import JSONResponse, Response, StreamingResponse

from app.domain.events import GenerationDone
from app.engine.request import GenerationRequest
from app.errors import ContextError
from app.server.answer import StopCut, dumps, finish_of, usage_of
from app.server.chat_api import Disconnected, fingerprint, first_of, warnings
from app.server.convert import max_tokens_of, sampling_of
from app.server.served import ServedModel, on_engine
from app.server.wire import ApiError, CompletionRequest, parse


class CompletionsApi:
    """See the module guarantees."""

    def __init__(self, served: ServedModel, limit: int) -> None:
        self.served, self.limit = served, limit

    def _job(self, request: CompletionRequest, prompt: str, cancel: threading.Event) -> Any:
        generation = GenerationRequest(
            max_tokens=max_tokens_of(request, self.limit), sampling=sampling_of(request)
        )

        def make() -> Iterator[Any]:
            try:
                yield from self.served.session().complete(prompt, generation, cancel)
            except ContextError as exc:
                raise ApiError(
                    400, exc.message, param=exc.field, code="context_length_exceeded"
                ) from None

        return make

    async def __call__(self, body: Any, disconnected: Disconnected) -> Response:
        request: CompletionRequest = parse(CompletionRequest, body)
        prompts = [request.prompt] if isinstance(request.prompt, str) else request.prompt
        if len(prompts) != 1:
            raise ApiError(400, "one prompt per request", param="prompt")
        cancel = threading.Event()
        make = self._job(request, prompts[0], cancel)
        events = on_engine(self.served.engine, make, cancel, self.served.stats)
        warn = warnings(request.ignored())
        head = {
            "id": f"cmpl-{uuid.uuid4().hex[:24]}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": self.served.name,
            "system_fingerprint": fingerprint(self.served.name),
        }
        text = Text(request.stops, cancel)
        first, watcher = await first_of(events, disconnected, cancel)
        if request.stream:
            watcher.cancel()
            stream = self._chunks(first, events, text, head, request)
            return StreamingResponse(stream, media_type="text/event-stream", headers=warn)
        try:
            for batch in first:
                text.feed_all(batch)
            async for batch in events:
                text.feed_all(batch)
        finally:
            watcher.cancel()
        shown = (prompts[0] if request.echo else "") + text.text + text.flush()
        choice = {"index": 0, "text": shown, "finish_reason": text.finish_reason, "logprobs": None}
        return JSONResponse({**head, "choices": [choice], "usage": text.usage()}, headers=warn)

    async def _chunks(
        self,
        first: list[Any],
        events: AsyncIterator[Any],
        text: Text,
        head: dict[str, Any],
        request: CompletionRequest,
    ) -> AsyncIterator[bytes]:
        def chunk(piece: str, finish: str | None = None) -> bytes:
            choice = {"index": 0, "text": piece, "finish_reason": finish, "logprobs": None}
            return f"data: {dumps({**head, 'choices': [choice]})}\n\n".encode()

        if request.echo:
            yield chunk(
                str(request.prompt if isinstance(request.prompt, str) else request.prompt[0])
            )
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
        if request.stream_options is not None and request.stream_options.include_usage:
            yield f"data: {dumps({**head, 'choices': [], 'usage': text.usage()})}\n\n".encode()
        yield b"data: [DONE]\n\n"


class Text:
    """A completion's text as it grows, cut at the first stop sequence."""

    def __init__(self, stops: list[str], cancel: threading.Event) -> None:
        self.cut = StopCut(stops, cancel)
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


__all__ = ["CompletionsApi", "Text"]
