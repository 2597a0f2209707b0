"""`POST /v1/responses`: the Responses API gpt-oss was designed around (also at llama-server's
unprefixed path).

Guarantees: a request is read once (`wire`) and converted straight into the app's own `Asked`
(`convert`: no other API's body in between), so it is answered by the same turn driver, parser
and reply builder as every other API (`app/server/running.py`), written as a `response` or its
events (`output`); a field the API does not have, or one of a wrong type, is a 400 naming it;
the `X-Harmony-Desk-Warning` header of an answer, streamed or whole, names the fields given
that are not applied (tools left out of the prompt among them), says what fitting the context
left out or cut, a reasoning effort taken as its nearest (`chat.effort`) and, for a whole
answer, a JSON answer that failed its check; a model that stopped before answering anything is
a 503.
"""

from __future__ import annotations

from functools import partial

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from app.server.asked import Target, off_loop
from app.server.chat.effort import said, taken_as
from app.server.errors import parse
from app.server.fleet import Fleet
from app.server.keepalive import COMMENT, kept_alive
from app.server.options import ServeOptions
from app.server.responses.convert import asked
from app.server.responses.output import Stream, shell, whole
from app.server.responses.wire import ResponsesRequest
from app.server.routing import Routes, body_of
from app.server.running import start

PATHS = ("/v1/responses", "/responses")  # `/responses`: llama-server's unprefixed path


class ResponsesRoute:
    """The Responses endpoint of the models served (see the module guarantees)."""

    def __init__(self, fleet: Fleet, options: ServeOptions) -> None:
        self.fleet, self.options = fleet, options

    async def __call__(self, request: Request) -> Response:
        asked_for = parse(ResponsesRequest, body_of(request))
        served = await self.fleet.claim(asked_for.model)
        target = Target.of(served, self.options)
        what = await off_loop(partial(asked, asked_for, target), asked_for.has_images)
        note = taken_as(asked_for.effort, "reasoning.effort", what.ignored)
        run = await start(served, what, request.is_disconnected)
        started = shell(served.name, asked_for)
        if asked_for.stream:
            run.watcher.cancel()  # a streamed answer learns of a gone client from its writes
            events = kept_alive(Stream(run, started).events(), COMMENT)
            return StreamingResponse(
                events, media_type="text/event-stream", headers=run.headers(note)
            )
        await run.drain()
        failure = run.failure()
        if failure is not None:
            raise failure
        headers = run.headers(said(note, run.answer.problem()))
        return JSONResponse(whole(started, run.answer), headers=headers)


def attach(routes: Routes, fleet: Fleet, options: ServeOptions) -> None:
    """Add the Responses routes of `fleet`'s models to `routes`."""
    routes.post(PATHS, ResponsesRoute(fleet, options))


__all__ = ["PATHS", "ResponsesRoute", "attach"]
