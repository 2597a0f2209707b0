"""/v1/embeddings: OpenAI's embeddings API over the server's embedding model.

Guarantees: `input` is a string, a list of strings, a token array or a list of token arrays
(1 to `MAX_INPUTS` of them); the answer is OpenAI's shape exactly — `{"object": "list", "data":
[{"object": "embedding", "index", "embedding"}], "model", "usage": {"prompt_tokens",
"total_tokens"}}`, one entry per input in order — with unit-length vectors, as floats or, for
`encoding_format: "base64"`, as little-endian float32 bytes in base64 (OpenAI's encoding: the
same numbers); `dimensions` cuts a vector short and renormalises it on a model trained for it
(`EmbedderFacts.truncatable`) and is a 400 that says so on any other; the same input gives the
same vector. A request is answered 4xx with a reason, never a 500: an unknown model is a 404
(`model_not_found`), the chat model a 400 (`model_cannot_embed`), an input the model cannot
embed (empty, too long for its context, token ids it does not have) a 400 naming the input.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Sequence
from typing import Any

import numpy as np
from starlette.responses import JSONResponse, Response

from app.domain.embedding import Embedded, Embedder, EmbedderFacts, EmbedInput, Refusal
from app.errors import WorkerError
from app.server.wire import ApiError, EmbeddingRequest, parse

MAX_INPUTS = 2048  # inputs one request may hold (OpenAI's limit)
_CODES = {
    Refusal.TOO_LONG: "context_length_exceeded",
    Refusal.EMPTY: "empty_input",
    Refusal.NO_TOKEN_IDS: "token_input_unsupported",
    Refusal.BAD_TOKEN: "invalid_token",
}


def model_entry(facts: EmbedderFacts) -> dict[str, Any]:
    """The embedding model's entry in /v1/models."""
    return {
        "id": facts.name,
        "object": "model",
        "created": facts.created,
        "owned_by": facts.owned_by,
    }


def _inputs(given: str | list[str] | list[int] | list[list[int]]) -> list[EmbedInput]:
    """The request's inputs, one per vector asked for."""
    if isinstance(given, str):
        return [given]
    if given and all(isinstance(x, int) for x in given):
        return [tuple(int(x) for x in given)]  # type: ignore[arg-type]  # one token array
    inputs: list[EmbedInput] = [x if isinstance(x, str) else tuple(x) for x in given]  # type: ignore[arg-type]
    if not inputs:
        raise ApiError(400, "input is empty: give a string, or a list of 1 or more", param="input")
    if len(inputs) > MAX_INPUTS:
        raise ApiError(400, f"input holds {len(inputs)} items, at most {MAX_INPUTS}", param="input")
    return inputs


def _check_dimensions(facts: EmbedderFacts, dimensions: int | None) -> None:
    """A 400 unless the model can give `dimensions`."""
    if dimensions is None or dimensions == facts.dims:
        return
    if dimensions < 1 or dimensions > facts.dims:
        said = f"dimensions must be from 1 to {facts.dims} for {facts.name}"
        raise ApiError(400, said, param="dimensions", code="invalid_value")
    if not facts.truncatable:
        said = (
            f"{facts.name} does not support `dimensions`: its vectors have {facts.dims}"
            " dimensions and it was not trained for shorter ones (leave `dimensions` out)"
        )
        raise ApiError(400, said, param="dimensions", code="dimensions_unsupported")


def _cut(rows: np.ndarray, dimensions: int | None) -> np.ndarray:
    """`rows` cut to `dimensions` and renormalised (`_check_dimensions` said it may be)."""
    if dimensions is None or dimensions >= rows.shape[1]:
        return rows
    cut = rows[:, :dimensions]
    norms = np.linalg.norm(cut, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(cut, norms, out=np.zeros_like(cut), where=norms > 0)
    return unit


def _data(rows: np.ndarray, encoding: str) -> list[dict[str, Any]]:
    if encoding == "base64":
        vectors: Sequence[Any] = [
            base64.b64encode(r.astype("<f4").tobytes()).decode() for r in rows
        ]
    else:
        vectors = rows.astype(np.float32).tolist()
    return [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]


class EmbeddingsApi:
    """/v1/embeddings for one embedding model beside the chat model `chat_name`."""

    def __init__(self, embedder: Embedder, chat_name: str) -> None:
        self.embedder, self.chat_name = embedder, chat_name

    def _check_model(self, model: str) -> None:
        name = self.embedder.facts.name
        if model in ("", name):
            return
        if model == self.chat_name:
            said = f"{model} is a chat model: it has no embeddings here; ask for {name}"
            raise ApiError(400, said, param="model", code="model_cannot_embed")
        said = f"the model {model!r} does not exist here; the embedding model is {name}"
        raise ApiError(404, said, param="model", code="model_not_found")

    async def __call__(self, body: Any) -> Response:
        request: EmbeddingRequest = parse(EmbeddingRequest, body)
        self._check_model(request.model)
        facts = self.embedder.facts
        _check_dimensions(facts, request.dimensions)
        inputs = _inputs(request.input)
        try:
            done = await asyncio.to_thread(self.embedder.embed, inputs)
        except WorkerError as exc:
            said = f"the embedding model could not answer: {exc.message}"
            raise ApiError(503, said, type="server_error", code="embedding_worker_failed") from exc
        if not isinstance(done, Embedded):
            raise ApiError(400, done.reason, param="input", code=_CODES[done.why])
        rows = np.frombuffer(done.vectors, dtype="<f4").reshape(len(inputs), done.dims)
        rows = _cut(rows, request.dimensions)
        used = sum(done.tokens)
        return JSONResponse(
            {
                "object": "list",
                "data": _data(rows, request.encoding_format),
                "model": facts.name,
                "usage": {"prompt_tokens": used, "total_tokens": used},
            }
        )


__all__ = ["MAX_INPUTS", "EmbeddingsApi", "model_entry"]
