"""The embeddings request as the server accepts it (OpenAI's `/v1/embeddings`).

Guarantees: validated before anything runs (`errors.parse`): a field the API does not have, or
a value of the wrong type, is a 400 naming it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class EmbeddingRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = ""
    input: str | list[str] | list[int] | list[list[int]]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = None
    user: str | None = None


__all__ = ["EmbeddingRequest"]
