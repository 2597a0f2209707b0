"""`POST /v1/embeddings`: OpenAI's embeddings API over the server's embedding model (also at
llama-server's unprefixed path and Databricks' SDK path).

Guarantees: the answer is OpenAI's shape exactly — `{"object": "list", "data": [{"object":
"embedding", "index", "embedding"}], "model", "usage": {"prompt_tokens", "total_tokens"}}`, one
entry per input in order — with unit-length vectors (`convert`); the same input gives the same
vector. The embedding model names clients hardcode (OpenAI's, `ALIASES`) are answered by the
server's embedding model, and the warning header says so; an embedding model of the library
named by the request is loaded on it like a chat model (`Fleet.claim(..., embeds=True)`: the
budget, idle unloading and pins hold) and answers it. A request is answered 4xx with a
reason, never a 500: any other unknown model is a 404 (`model_not_found`), the chat model a 400
(`model_cannot_embed`) — and so is every request when no embedding model is loaded — an input
the model cannot embed (empty, too long for its context, token ids it does not have) a 400
naming the input; a worker that fails is a 503. What one request may cost is bounded before
any model sees it (`limits`: its text and token ids in all, a 413; a text past what the
context could hold, a 400), at most `limits.AT_ONCE` requests embed at once with
`limits.WAITING` more in line (past both, a 429 with `Retry-After`), and the answer is written
a few vectors at a time.
"""

from __future__ import annotations

import asyncio

import numpy as np
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from app.domain.embedding import Embedded, Embedder, Refusal
from app.errors import WorkerError
from app.server.embeddings.convert import answer_of, check_dimensions, cut, inputs_of
from app.server.embeddings.limits import RETRY_AFTER_S, Admission, Busy, check_size
from app.server.embeddings.wire import EmbeddingRequest
from app.server.errors import ApiError, parse
from app.server.fleet import Fleet
from app.server.options import ServeOptions
from app.server.routing import Routes, body_of
from app.server.running import warnings

PATHS = (
    "/v1/embeddings",
    "/embeddings",  # llama-server's unprefixed path
    "/serving-endpoints/embeddings",  # Databricks through the openai SDK
)
_CODES = {
    Refusal.TOO_LONG: "context_length_exceeded",
    Refusal.EMPTY: "empty_input",
    Refusal.NO_TOKEN_IDS: "token_input_unsupported",
    Refusal.BAD_TOKEN: "invalid_token",
}


ALIASES = ("text-embedding-3-small", "text-embedding-3-large", "text-embedding-ada-002")


class EmbeddingsRoute:
    """The embeddings endpoint beside the served chat models (see the module guarantees)."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.admission = Admission()

    async def _embedder(self, model: str) -> tuple[Embedder, str | None]:
        """The embedding model that answers a request for `model`, and for a name clients
        hardcode (`ALIASES`) what the warning header says; else a 4xx naming the model."""
        own = self.fleet.default.embedder
        if own is not None and model in ("", own.facts.name):
            return own, None
        if own is not None and model in ALIASES:
            return own, f"model {model} is answered by {own.facts.name}: its vectors, not OpenAI's"
        if model and self.fleet.embeds(model):
            served = await self.fleet.claim(model, embeds=True)  # loaded if it is not
            assert served.embedder is not None  # an embedding model's `ServedModel` has one
            return served.embedder, None
        if own is None or (model and self.fleet.serves(model)):
            name = model or self.fleet.default.name
            ask = f"; ask for {own.facts.name}" if own is not None else ""
            said = f"{name} is a chat model: it has no embeddings here{ask}"
            if own is None:
                said += "; load an embedding model to use /v1/embeddings"
            raise ApiError(400, said, param="model", code="model_cannot_embed")
        said = f"the model {model!r} does not exist here; the embedding model is {own.facts.name}"
        raise ApiError(404, said, param="model", code="model_not_found")

    async def __call__(self, request: Request) -> Response:
        body = body_of(request)
        model = body.get("model") if isinstance(body, dict) else None
        embedder, alias = await self._embedder(model if isinstance(model, str) else "")
        facts = embedder.facts
        check_size(body.get("input") if isinstance(body, dict) else None, facts.name, facts.context)
        try:
            async with self.admission.turn():
                return await self._answer(embedder, body, alias)
        except Busy as busy:
            headers = {"retry-after": str(RETRY_AFTER_S)}
            return JSONResponse(busy.body(), status_code=busy.status, headers=headers)

    async def _answer(self, embedder: Embedder, body: object, alias: str | None) -> Response:
        asked = parse(EmbeddingRequest, body)
        facts = embedder.facts
        check_dimensions(facts, asked.dimensions)
        inputs = inputs_of(asked.input)
        try:
            done = await asyncio.to_thread(embedder.embed, inputs)
        except WorkerError as exc:
            said = f"the embedding model could not answer: {exc.message}"
            raise ApiError(503, said, type="server_error", code="embedding_worker_failed") from exc
        if not isinstance(done, Embedded):
            raise ApiError(400, done.reason, param="input", code=_CODES[done.why])
        rows = np.frombuffer(done.vectors, dtype="<f4").reshape(len(inputs), done.dims)
        used = sum(done.tokens)
        head = {"model": facts.name, "usage": {"prompt_tokens": used, "total_tokens": used}}
        return StreamingResponse(
            answer_of(cut(rows, asked.dimensions), asked.encoding_format, head),
            media_type="application/json",
            headers=warnings((), alias),
        )


def attach(routes: Routes, fleet: Fleet, options: ServeOptions) -> None:
    """Add the embeddings routes beside `fleet`'s models to `routes`."""
    routes.post(PATHS, EmbeddingsRoute(fleet))


__all__ = ["PATHS", "EmbeddingsRoute", "attach"]
