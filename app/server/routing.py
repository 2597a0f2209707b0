"""The server's route table: every API adds its own routes here, with the shape its errors take.

Guarantees: a path has one route (a second is refused, never a silent overwrite); a POST body
is read within `ServeOptions.body_timeout_s` and passes the boundary checks of `intake` (off
the event loop for a large one: `intake.json_of`) before its handler runs (the handler finds it
with `body_of`); an `ApiError` a handler raises is answered with its status in its API's shape
(OpenAI's unless the route says otherwise, as Anthropic's do), and so are the guard's refusals
and the fallback's 404 and 405 on that path (`error_body`); any other exception (but a client's
going away, which the guard logs) is a 500 in that shape, logged with its traceback, and never
reaches the window. A handler is found again by its path (`handler`), for a route that answers
in another's place (Databricks' invocations).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.server.errors import ApiError
from app.server.intake import json_of, printable

log = logging.getLogger("server")

Handler = Callable[[Request], Awaitable[Response]]
Shape = Callable[[ApiError], dict[str, Any]]  # an error as one API writes it
ErrorBody = Callable[[str, ApiError], dict[str, Any]]  # a path's error, as its API writes it


def openai_shape(error: ApiError) -> dict[str, Any]:
    """`{"error": {"message", "type", "param", "code"}}`."""
    return error.body()


def body_of(request: Request) -> Any:
    """The request's JSON body, read and checked before its handler ran."""
    return request.state.json


def _answering(handler: Handler, body_timeout_s: float, shape: Shape) -> Handler:
    async def endpoint(request: Request) -> Response:
        try:
            if request.method == "POST":
                request.state.json = await json_of(request.body(), body_timeout_s)
            return await handler(request)
        except ApiError as exc:
            return JSONResponse(shape(exc), status_code=exc.status)
        except ClientDisconnect:
            raise  # the client went away: no error of the server's (the guard logs it)
        except Exception as exc:
            log.exception("the server failed on %s", printable(request.url.path))
            said = f"internal error: {type(exc).__name__}: {exc}"
            error = ApiError(
                500, said.encode("utf-8", "backslashreplace").decode(), type="server_error"
            )
            return JSONResponse(shape(error), status_code=500)

    return endpoint


class Routes:
    """The route table (see the module guarantees)."""

    def __init__(self, body_timeout_s: float) -> None:
        self.body_timeout_s = body_timeout_s
        self.table: list[Route] = []
        self._handlers: dict[str, Handler] = {}
        self._shapes: dict[str, Shape] = {}

    def get(self, paths: Iterable[str], handler: Handler) -> None:
        """`handler` answers GET on each of `paths`."""
        self._add(paths, handler, "GET", openai_shape)

    def post(self, paths: Iterable[str], handler: Handler, shape: Shape = openai_shape) -> None:
        """`handler` answers POST on each of `paths`, its errors written by `shape`."""
        self._add(paths, handler, "POST", shape)

    def _add(self, paths: Iterable[str], handler: Handler, method: str, shape: Shape) -> None:
        for path in paths:
            if path in self._handlers:
                raise ValueError(f"{path} has a route already: give each path one handler")
            self._handlers[path] = handler
            if shape is not openai_shape:
                self._shapes[path] = shape
            endpoint = _answering(handler, self.body_timeout_s, shape)
            self.table.append(Route(path, endpoint, methods=[method]))

    def handler(self, path: str) -> Handler:
        """The handler that answers `path` (a KeyError if none does)."""
        return self._handlers[path]

    def error_body(self, path: str, error: ApiError) -> dict[str, Any]:
        """`error` as the API of `path` writes it (OpenAI's shape where no route says)."""
        return self._shapes.get(path.rstrip("/"), openai_shape)(error)


__all__ = ["ErrorBody", "Handler", "Routes", "Shape", "body_of", "openai_shape"]
