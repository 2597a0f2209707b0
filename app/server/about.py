"""The routes that say what is served, and load or unload a model: `/v1/models`, `/health`,
`/harmony-desk/status`, `/models/load` and `/models/unload`.

Guarantees: `GET /v1/models` (and llama-server's `/models`) lists the chat models loaded (the
default first), the embedding model when one is loaded, then the chat models the server may
load on request (the library's), in OpenAI's shape with llama-server's router `status`
(`loaded`, `loading`, `unloaded`, with `failed` and the reason after a failed load), and says
whether a chat model sees images as llama-server's router does (`architecture`:
`input_modalities` with `image`); `GET /health` is `{"status": "ok"}` — the server listens
only once its default model is loaded; `GET /harmony-desk/status` gives the default model's
name, the request counters and, for a local model, its sequences busy and queued, then every
loaded model (answering, pinned, memory, idle time), the aliases and the memory budget;
`POST /models/load` `{"model", "pin"?}` loads a model (pinned if asked) and
`POST /models/unload` `{"model"}` unloads one, as llama-server's router does
(`{"success": true}`), each refused with a 4xx that says why (`app.server.fleet`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.domain.embedding import EmbedderFacts
from app.server.errors import parse
from app.server.fleet import Fleet
from app.server.options import ServeOptions
from app.server.routing import Routes, body_of


def model_entry(facts: EmbedderFacts) -> dict[str, Any]:
    """The embedding model's entry in /v1/models."""
    return {
        "id": facts.name,
        "object": "model",
        "created": facts.created,
        "owned_by": facts.owned_by,
    }


class LoadRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str
    pin: bool = False


class UnloadRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str


class About:
    """What the served models say of themselves (see the module guarantees)."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet

    async def models(self, _request: Request) -> Response:
        embedder = self.fleet.default.embedder
        embedding = [model_entry(embedder.facts)] if embedder is not None else []
        listed = [*self.fleet.loaded(), *embedding, *self.fleet.unloaded()]
        return JSONResponse({"object": "list", "data": listed})

    async def health(self, _request: Request) -> Response:
        """llama-server's health check: the server answers once its model is loaded."""
        return JSONResponse({"status": "ok"})

    async def status(self, _request: Request) -> Response:
        served = self.fleet.default
        use = served.use() if served.use is not None else None
        said: dict[str, Any] = {"model": served.name, **served.stats}
        if use is not None:
            said["sequences"] = use
        return JSONResponse({**said, **self.fleet.said()})

    async def load(self, request: Request) -> Response:
        asked = parse(LoadRequest, body_of(request))
        resident = await self.fleet.load(asked.model, asked.pin)
        name = resident.served.name
        return JSONResponse({"success": True, "model": name, "n_ctx": resident.served.n_ctx})

    async def unload(self, request: Request) -> Response:
        asked = parse(UnloadRequest, body_of(request))
        return JSONResponse({"success": True, "model": await self.fleet.unload(asked.model)})


def attach(routes: Routes, fleet: Fleet, options: ServeOptions) -> None:
    """Add the routes that say what is served, and load or unload models, to `routes`."""
    about = About(fleet)
    routes.get(("/v1/models", "/models"), about.models)  # `/models`: llama-server's
    routes.get(("/health",), about.health)
    routes.get(("/harmony-desk/status",), about.status)
    routes.post(("/models/load",), about.load)  # llama-server's router's paths
    routes.post(("/models/unload",), about.unload)


__all__ = ["About", "attach", "model_entry"]
