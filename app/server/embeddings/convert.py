"""An embeddings request as what the embedding model is asked, and its vectors as OpenAI's data.

Guarantees: `input` is a string, a list of strings, a token array or a list of token arrays —
one vector asked for each, 1 to `MAX_INPUTS` of them (a 400 naming `input` otherwise);
`dimensions` is honoured only by a model trained for shorter vectors
(`EmbedderFacts.truncatable`: cut short and renormalised to unit length) and is a 400 that says
so on any other; vectors are written as floats or, for `encoding_format: "base64"`, as
little-endian float32 bytes in base64 (OpenAI's encoding: the same numbers); `answer_of` writes
the whole answer a few rows at a time (`ROWS_A_CHUNK`), so an answer's memory is its vectors'
and one chunk's text, never every vector as Python numbers at once.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from app.domain.embedding import EmbedderFacts, EmbedInput
from app.server.errors import ApiError

MAX_INPUTS = 2048  # inputs one request may hold (OpenAI's limit)
ROWS_A_CHUNK = 64  # vectors written to the answer at a time


def inputs_of(given: str | list[str] | list[int] | list[list[int]]) -> list[EmbedInput]:
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


def check_dimensions(facts: EmbedderFacts, dimensions: int | None) -> None:
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


def cut(rows: np.ndarray, dimensions: int | None) -> np.ndarray:
    """`rows` cut to `dimensions` and renormalised (`check_dimensions` said it may be)."""
    if dimensions is None or dimensions >= rows.shape[1]:
        return rows
    short = rows[:, :dimensions]
    norms = np.linalg.norm(short, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(short, norms, out=np.zeros_like(short), where=norms > 0)
    return unit


def data_of(rows: np.ndarray, encoding: str) -> list[dict[str, Any]]:
    """The vectors as OpenAI's `data` entries, in order."""
    if encoding == "base64":
        vectors: Sequence[Any] = [
            base64.b64encode(r.astype("<f4").tobytes()).decode() for r in rows
        ]
    else:
        vectors = rows.astype(np.float32).tolist()
    return [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]


def _json(value: Any) -> bytes:
    """`value` as JSON the way the server's other answers write it (compact, UTF-8)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def answer_of(rows: np.ndarray, encoding: str, head: dict[str, Any]) -> Iterator[bytes]:
    """The whole answer, `{"object": "list", "data": [...]}` then `head`'s fields (`model`,
    `usage`: at least one), written `ROWS_A_CHUNK` vectors at a time."""
    yield b'{"object":"list","data":['
    for start in range(0, len(rows), ROWS_A_CHUNK):
        entries = data_of(rows[start : start + ROWS_A_CHUNK], encoding)
        for entry in entries:
            entry["index"] += start
        piece = b",".join(_json(e) for e in entries)
        yield piece if start == 0 else b"," + piece
    rest = _json({k: v for k, v in head.items() if k not in ("object", "data")})
    yield b"]," + rest[1:]


__all__ = [
    "MAX_INPUTS",
    "ROWS_A_CHUNK",
    "answer_of",
    "check_dimensions",
    "cut",
    "data_of",
    "inputs_of",
]
