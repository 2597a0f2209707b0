"""The routes that say what is served: `/v1/models`, `/health` and `/harmony-desk/status`.

Guarantees: `GET /v1/models` (and llama-server's `/models`) lists the chat model and, when one
is loaded, the embedding model, in OpenAI's shape, and says whether the chat model sees images
as llama-server's router does (`architecture`: `input_modalities` with `image`); `GET /health`
is `{"status": "ok"}` — the server listens only once its model is loaded; `GET
/harmony-desk/status` gives the model's name, the request counters and, for a local model, its
sequences busy and queued.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.domain.embedding import EmbedderFacts
from app.server.options import ServeOptions
from app.server.routing import Routes
from app.server.served import ServedModel


def model_entry(facts: EmbedderFacts) -> dict[str, Any]:
    """The embedding model's entry in /v1/models."""
    return {
        "id": facts.name,
        "object": "model",
        "created": facts.created,
        "owned_by": facts.owned_by,
    }


class About:
    """What one served model says of itself (see the module guarantees)."""

    def __init__(self, served: ServedModel) -> None:
        self.served = served

    async def models(self, _request: Request) -> Response:
        s = self.served
        model: dict[str, Any] = {
            "id": s.name,
            "object": "model",
            "created": s.created,
            "owned_by": "harmony-desk",
        }
        inputs = ["text", "image"] if s.sees_images else ["text"]  # as llama-server's router says
        model["architecture"] = {"input_modalities": inputs, "output_modalities": ["text"]}
        embedding = [model_entry(s.embedder.facts)] if s.embedder is not None else []
        return JSONResponse({"object": "list", "data": [model, *embedding]})

    async def health(self, _request: Request) -> Response:
        """llama-server's health check: the server answers once its model is loaded."""
        return JSONResponse({"status": "ok"})

    async def status(self, _request: Request) -> Response:
        use = self.served.use() if self.served.use is not None else None
        said = {"model": self.served.name, **self.served.stats}
        return JSONResponse({**said, "sequences": use} if use is not None else said)


def attach(routes: Routes, served: ServedModel, options: ServeOptions) -> None:
    """Add the routes that say what is served to `routes`."""
    about = About(served)
    routes.get(("/v1/models", "/models"), about.models)  # `/models`: llama-server's
    routes.get(("/health",), about.health)
    routes.get(("/harmony-desk/status",), about.status)


__all__ = ["About", "attach", "model_entry"]
