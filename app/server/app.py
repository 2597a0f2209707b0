"""The server's app: each API attached once, behind the guard every request passes (Starlette +
uvicorn).

Guarantees: the routes are the ones the APIs attach to one table (`routing.Routes`), in the
order of `APIS` — what is served (`about`), chat completions, completions, the Responses API,
Anthropic's Messages API, embeddings, then Databricks' invocations, which answer with the
others' handlers; every request passes the guard first (`guard`: origin, host, token, content
type, body size), then the claims keeper (`claims.Claims`: a model is busy until the response
that claimed it ends), and CORS headers are sent only to origins the user listed; a path no
route has is a 404 and a method its route does not take a 405, error objects in the path's
API's shape (`fallback`); nothing a client sends reaches the window as an exception. The
OpenAI paths answer without `/v1` as well. While the app runs, the models idle past the fleet's
time are unloaded (its lifespan runs `Fleet.sweeping`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware

from app.server import about, invocations
from app.server.anthropic import routes as anthropic
from app.server.chat import routes as chat
from app.server.claims import Claims
from app.server.completions import routes as completions
from app.server.embeddings import routes as embeddings
from app.server.fallback import exception_handlers
from app.server.fleet import Fleet
from app.server.guard import Guard
from app.server.options import ServeOptions
from app.server.responses import routes as responses
from app.server.routing import Routes
from app.server.served import ServedModel

Attach = Callable[[Routes, Fleet, ServeOptions], None]
APIS: tuple[Attach, ...] = (
    about.attach,
    chat.attach,
    completions.attach,
    responses.attach,
    anthropic.attach,
    embeddings.attach,
    invocations.attach,  # last: it answers with the handlers above
)


def make_app(served: ServedModel | Fleet, options: ServeOptions) -> Starlette:
    """The server for `served`: one model, or several (see the module guarantees)."""
    fleet = served if isinstance(served, Fleet) else Fleet.single(served)
    routes = Routes(options.body_timeout_s)
    for attach in APIS:
        attach(routes, fleet, options)
    stats = fleet.default.stats
    guard = Middleware(Guard, options=options, stats=stats, error_body=routes.error_body)
    middleware = [guard, Middleware(Claims)]
    if options.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(options.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["authorization", "content-type", "x-api-key", "anthropic-version"],
            )
        )

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        sweeping = asyncio.create_task(fleet.sweeping())
        try:
            yield
        finally:
            sweeping.cancel()

    return Starlette(
        routes=routes.table,
        middleware=middleware,
        exception_handlers=exception_handlers(routes.error_body),
        lifespan=lifespan,
    )


__all__ = ["APIS", "make_app"]
