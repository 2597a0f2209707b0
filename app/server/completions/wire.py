"""The completions request as the server accepts it (OpenAI's legacy `/v1/completions`).

Guarantees: validated before anything runs (`errors.parse`): a field the API does not have, or
a value out of range, is a 400 naming it; `best_of` is at most 1 (one completion per prompt).
"""

from __future__ import annotations

from pydantic import Field

from app.server.sampled import Sampled


class CompletionRequest(Sampled):
    prompt: str | list[str]
    echo: bool = False
    suffix: str | None = None
    logprobs: int | None = Field(None, ge=0, le=20)
    best_of: int | None = Field(None, ge=1, le=1)


__all__ = ["CompletionRequest"]
