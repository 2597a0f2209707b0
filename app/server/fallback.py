"""What the server answers where no route does: an error object, never Starlette's plain text.

Guarantees: a path no route has is a 404 and a method its route does not take is a 405 (with
the `Allow` header that names the ones it does), both JSON in OpenAI's error shape
(`{"error": {"message", "type", "param", "code"}}`) — in the shape of the API a path belongs to
(Anthropic's on its Messages paths), as the guard's refusals are; any other `HTTPException`
keeps its status and headers, in that shape.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.server.errors import ApiError
from app.server.routing import ErrorBody

_CODES = {404: "not_found", 405: "method_not_allowed"}


def _said(request: Request, status: int, allowed: str) -> str:
    where = f"{request.method} {request.url.path}"
    if status == 404:
        return f"{where}: no such route on this server"
    if status == 405:
        return f"{where}: the method is not allowed here (allowed: {allowed or 'none'})"
    return f"{where}: HTTP {status}"


Handler = Callable[[Request, Exception], Awaitable[Response]]


def unrouted(error_body: ErrorBody) -> Handler:
    """The handler of a request no route answered (see the module guarantees)."""

    async def answer(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)  # registered for HTTPException only
        headers = dict(exc.headers or {})
        said = _said(request, exc.status_code, headers.get("Allow", ""))
        error = ApiError(exc.status_code, said, code=_CODES.get(exc.status_code))
        body = error_body(request.url.path, error)
        return JSONResponse(body, status_code=exc.status_code, headers=headers)

    return answer


def exception_handlers(error_body: ErrorBody) -> dict[Any, Handler]:
    """Starlette's `exception_handlers`: `unrouted`, writing errors with `error_body`."""
    return {HTTPException: unrouted(error_body)}


__all__ = ["exception_handlers", "unrouted"]
