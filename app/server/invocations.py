"""Databricks' serving-endpoint form, `POST /serving-endpoints/{name}/invocations`: one path for
every API, the body saying which.

Guarantees: a body with `messages` is answered as chat completions, one with `prompt` as
completions and one with `input` as embeddings — by the very handlers of those paths, so the
answer is what the API's own path gives; any other body is a 400 that says what an invocation
holds. Attached after the APIs it answers for.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from app.server.errors import ApiError
from app.server.fleet import Fleet
from app.server.options import ServeOptions
from app.server.routing import Routes, body_of

PATH = "/serving-endpoints/{name}/invocations"
_BY_FIELD = (  # the field a body has → the path whose handler answers it
    ("messages", "/v1/chat/completions"),
    ("prompt", "/v1/completions"),
    ("input", "/v1/embeddings"),
)


def attach(routes: Routes, fleet: Fleet, options: ServeOptions) -> None:
    """Add the invocations route to `routes` (the APIs it answers for already attached)."""
    handlers = [(field, routes.handler(path)) for field, path in _BY_FIELD]

    async def invocations(request: Request) -> Response:
        body = body_of(request)
        for field, handler in handlers:
            if isinstance(body, dict) and field in body:
                return await handler(request)
        raise ApiError(
            400,
            "an invocation has `messages` (chat), `prompt` (completions) or `input` (embeddings)",
        )

    routes.post((PATH,), invocations)


__all__ = ["PATH", "attach"]
