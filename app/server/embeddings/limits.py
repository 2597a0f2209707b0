"""What one embeddings request may cost, and how many embed at once: memory bounded, not hoped.

Why: an embedding model's cost grows with the text it is given, not with the body's bytes —
WordLlama took 780 MB and 17 s to refuse one 8 MiB string (it tokenizes it whole first), and
290 MB for 2,048 inputs of 4,000 characters; 64 such requests could be in flight at once.

Guarantees:
- `check_size` reads the parsed body's `input` before any model (or the request's own model
  validation) sees it: more than `MAX_REQUEST_CHARS` characters of text, or `MAX_REQUEST_TOKENS`
  token ids, in all is a 413 (`input_too_large`, naming `input` and the figures); one text
  longer than the model's context could be at `MAX_TOKEN_CHARS` characters a token is a 400
  `context_length_exceeded` naming it, before it is tokenized;
- `Admission`: at most `AT_ONCE` requests are embedded and answered at once, `WAITING` more wait
  their turn (each of them within the bounds above), and one past both is refused at once with
  `Busy` (a 429 with `Retry-After`), never queued without bound and never a 500.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from app.server.errors import ApiError

MAX_REQUEST_CHARS = 1_200_000  # characters of text in one request (about 300,000 tokens)
MAX_REQUEST_TOKENS = 300_000  # token ids in one request (OpenAI's own bound per request)
MAX_TOKEN_CHARS = 128  # no tokenizer served has a longer token: past this × context, too long
AT_ONCE = 2  # requests embedded and answered at once
WAITING = 16  # requests waiting for their turn; past these, a 429
RETRY_AFTER_S = 1


class Busy(ApiError):
    """Every turn to embed is taken and as many requests wait: try again shortly (a 429)."""

    def __init__(self) -> None:
        said = (
            f"the embedding model is answering {AT_ONCE} requests and {WAITING} more are"
            f" waiting; try again in {RETRY_AFTER_S} s"
        )
        super().__init__(429, said, type="rate_limit_error", code="rate_limit_exceeded")


def _sizes(given: Any) -> tuple[int, int]:
    """Characters of text and token ids in a raw `input` (what is neither is left to the
    request's validation)."""
    items = given if isinstance(given, list) else [given]
    chars = tokens = 0
    for item in items:
        if isinstance(item, str):
            chars += len(item)
        elif isinstance(item, int):
            tokens += 1
        elif isinstance(item, list):
            tokens += len(item)
    return chars, tokens


def check_size(given: Any, model: str, context: int) -> None:
    """A 413 or 400 for an `input` past the bounds (see the module guarantees)."""
    chars, tokens = _sizes(given)
    if chars > MAX_REQUEST_CHARS or tokens > MAX_REQUEST_TOKENS:
        said = (
            f"input holds {chars:,} characters of text and {tokens:,} token ids; one request"
            f" takes at most {MAX_REQUEST_CHARS:,} characters and {MAX_REQUEST_TOKENS:,} token"
            " ids in all: send the inputs in several requests"
        )
        raise ApiError(413, said, param="input", code="input_too_large")
    longest = context * MAX_TOKEN_CHARS
    texts = given if isinstance(given, list) else [given]
    for index, text in enumerate(texts):
        if isinstance(text, str) and len(text) > longest:
            said = (
                f"input {index} is too large: {len(text):,} characters, more than {model}'s"
                f" {context} tokens can hold"
            )
            raise ApiError(400, said, param="input", code="context_length_exceeded")


class Admission:
    """Turns to embed (see the module guarantees)."""

    def __init__(self, at_once: int = AT_ONCE, waiting: int = WAITING) -> None:
        self.at_once, self.waiting = at_once, waiting
        self.inside = 0  # embedding, or waiting for a turn
        self._turns = asyncio.Semaphore(at_once)

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """A turn to embed; `Busy` at once when every turn and every place in line is taken."""
        if self.inside >= self.at_once + self.waiting:
            raise Busy()
        self.inside += 1
        try:
            async with self._turns:
                yield
        finally:
            self.inside -= 1


__all__ = [
    "AT_ONCE",
    "MAX_REQUEST_CHARS",
    "MAX_REQUEST_TOKENS",
    "MAX_TOKEN_CHARS",
    "RETRY_AFTER_S",
    "WAITING",
    "Admission",
    "Busy",
    "check_size",
]
