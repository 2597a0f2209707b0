"""The sampling and length fields OpenAI's chat completions and completions share.

Guarantees: a value out of range is a 400 naming the field (`errors.parse`); a field the API
has but this server does not apply (penalties, `logit_bias`, `suffix`) is accepted and said in
the `X-Harmony-Desk-Warning` header (`ignored`), never silently; the sampling asked changes the
model's own only where given (`sampling_of`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.engine.request import SamplingAsk
from app.server.asked import stops_of


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    include_usage: bool = False


class Sampled(BaseModel):
    """The sampling and length fields chat completions and completions share."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None  # any name (one model is served); null as llama-server's clients send
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    top_k: int | None = Field(None, ge=0)
    min_p: float | None = Field(None, ge=0, le=1)
    seed: int | None = Field(None, ge=0)
    stop: str | list[str] | None = None
    n: int = Field(1, ge=1, le=1, description="one choice per request")
    presence_penalty: float | None = Field(None, ge=-2, le=2)
    frequency_penalty: float | None = Field(None, ge=-2, le=2)
    logit_bias: dict[str, float] | None = None
    user: str | None = None
    metadata: dict[str, Any] | None = None
    store: bool | None = None

    def ignored(self) -> list[str]:
        """The fields given that this server does not apply (said in a warning header)."""
        unapplied = ("presence_penalty", "frequency_penalty", "logit_bias", "suffix")
        return [f for f in unapplied if getattr(self, f, None)]

    @property
    def budget(self) -> int | None:
        """The answer's tokens asked for: `max_completion_tokens`, else `max_tokens`."""
        return self.max_completion_tokens or self.max_tokens

    @property
    def stops(self) -> tuple[str, ...]:
        return stops_of(self.stop, "stop")

    @property
    def include_usage(self) -> bool:
        """Whether a stream ends with a chunk of the usage."""
        return self.stream_options is not None and self.stream_options.include_usage


def sampling_of(request: Sampled) -> SamplingAsk:
    """What the request changes of the model's sampling."""
    return SamplingAsk(
        temperature=request.temperature,
        top_p=request.top_p,
        top_k=request.top_k,
        min_p=request.min_p,
        seed=request.seed,
    )


__all__ = ["Sampled", "StreamOptions", "sampling_of"]
