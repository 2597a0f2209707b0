"""How the next token is chosen: one value shared by the templates (their defaults), the engine
(the worker and remote endpoints) and the settings; `extra="forbid"`, one field per knob with its
range and description, so one declaration drives validation, the settings dialog and tooltips."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Sampling(BaseModel):
    """How the next token is chosen."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float = Field(1.0, ge=0.0, le=2.0, description="Randomness; 0 is greedy.")
    top_p: float = Field(1.0, gt=0.0, le=1.0, description="Nucleus sampling mass.")
    top_k: int = Field(0, ge=0, description="Keep only the k likeliest tokens; 0 keeps all.")
    min_p: float = Field(
        0.0, ge=0.0, le=1.0, description="Drop tokens below this share of the top one."
    )
    repeat_penalty: float = Field(
        1.0, ge=0.5, le=2.0, description="Penalty on repeated tokens; 1 is off."
    )
    seed: int | None = Field(None, ge=0, description="Fixed seed for reproducible sampling.")


__all__ = ["Sampling"]
