"""Embeddings as values: what an embedding model gives, what it refuses, and what it is.

Guarantees: an `Embedded` holds one unit-length float32 vector per input, in the inputs' order
(little-endian rows of `dims` floats: the bytes OpenAI's base64 encoding carries), and the
tokens each input took; an input that cannot be embedded is a `NotEmbedded` value naming the
input and the reason in words, never an exception; every embedding model the app serves
(llama.cpp's in its worker, WordLlama in process) answers through the one `Embedder` seam.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

EmbedInput = str | tuple[int, ...]  # a text, or token ids of the model's own vocabulary


@dataclass(frozen=True)
class Embedded:
    """One unit vector per input (float32 rows, little-endian) and each input's tokens."""

    vectors: bytes
    dims: int
    tokens: tuple[int, ...]


class Refusal(StrEnum):
    """Why an input is not embedded."""

    TOO_LONG = "too_long"  # more tokens than the model's context
    EMPTY = "empty"  # no tokens at all
    NO_TOKEN_IDS = "no_token_ids"  # token arrays given to a model with no token ids of ours
    BAD_TOKEN = "bad_token"  # a token id outside the model's vocabulary


@dataclass(frozen=True)
class NotEmbedded:
    """The first input that cannot be embedded (`index`), why, and the reason in words."""

    index: int
    why: Refusal
    reason: str


@dataclass(frozen=True)
class EmbedderFacts:
    """What a client may ask of an embedding model."""

    name: str
    dims: int
    context: int  # the most tokens one input may have
    truncatable: bool  # trained so that a prefix of a vector is a vector (Matryoshka)
    owned_by: str = "harmony-desk"
    created: int = 0


class Embedder(Protocol):
    """An embedding model: its facts, and the vectors of a list of inputs (called from a
    worker thread; it may block)."""

    @property
    def facts(self) -> EmbedderFacts: ...

    def embed(self, inputs: Sequence[EmbedInput]) -> Embedded | NotEmbedded: ...


__all__ = ["EmbedInput", "Embedded", "Embedder", "EmbedderFacts", "NotEmbedded", "Refusal"]
