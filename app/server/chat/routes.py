"""`POST /v1/chat/completions`: OpenAI's chat API (also at llama-server's unprefixed path and at
the path Databricks' clients call through the openai SDK).

Guarantees: a request is read once (`wire`), converted once into the app's own `Asked`
(`convert`; with images, off the server's loop), answered by the same turn driver, parser and
reply builder as every frontend (`app/server/running.py`), and written as a `chat.completion`
or its chunks (`completion`); `n` > 1 asks for several choices decoded side by side
(`choices`); an answer not streamed whose JSON (or a call's arguments) failed the app's check
after generation — cut off by `max_tokens`, say — says why in an `X-Harmony-Desk-Warning`
header, as does a prompt the request's overflow policy fitted to the context (what was left out
or cut), a field that is not applied and a reasoning effort taken as its nearest
(`effort.taken_as`).
"""

from __future__ import annotations

from functools import partial

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from app.server.asked import Target, off_loop
from app.server.chat.choices import choices
from app.server.chat.completion import Shape, chunks, whole
from app.server.chat.convert import asked
from app.server.chat.effort import said, taken_as
from app.server.chat.wire import ChatRequest
from app.server.errors import parse
from app.server.fleet import Fleet
from app.server.keepalive import COMMENT, kept_alive
from app.server.options import ServeOptions
from app.server.routing import Routes, body_of
from app.server.running import start

PATHS = (
    "/v1/chat/completions",
    "/chat/completions",  # llama-server's unprefixed path (clients configured without `/v1`)
    "/serving-endpoints/chat/completions",  # Databricks through the openai SDK
)


class ChatRoute:
    """The chat endpoint of the models served (see the module guarantees)."""

    def __init__(self, fleet: Fleet, options: ServeOptions) -> None:
        self.fleet, self.options = fleet, options
        self.field = options.reasoning_field

    async def __call__(self, request: Request) -> Response:
        asked_for = parse(ChatRequest, body_of(request))
        served = await self.fleet.claim(asked_for.model)
        target = Target.of(served, self.options)
        what = await off_loop(partial(asked, asked_for, target), asked_for.has_images)
        shape = Shape.of(asked_for, served.name, self.field)
        disconnected = request.is_disconnected
        note = taken_as(asked_for.reasoning_effort, "reasoning_effort", what.ignored)
        if asked_for.n > 1:
            return await choices(
                served, what, shape, asked_for.n, asked_for.stream, disconnected, note
            )
        run = await start(served, what, disconnected)
        if asked_for.stream:
            run.watcher.cancel()  # a streamed answer learns of a gone client from its writes
            stream = kept_alive(chunks(run, shape), COMMENT)
            headers = run.headers(note)
            return StreamingResponse(stream, media_type="text/event-stream", headers=headers)
        await run.drain()
        headers = run.headers(said(note, run.answer.problem()))
        return JSONResponse(whole(run, shape), headers=headers)


def attach(routes: Routes, fleet: Fleet, options: ServeOptions) -> None:
    """Add the chat routes of `fleet`'s models to `routes`."""
    routes.post(PATHS, ChatRoute(fleet, options))


__all__ = ["PATHS", "ChatRoute", "attach"]
