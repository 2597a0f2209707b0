"""Per-model choices the user made (template, sampling values, how the model is loaded: GPU
layers, flash attention, cache type, context length), remembered across runs.

Guarantees: stored as JSON in the per-user config folder (`HARMONY_DESK_CONFIG` overrides it),
written atomically; a missing or damaged file reads as "no choices" and is never fatal; values
are validated with the same bounds as the template defaults.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.domain.placement import LoadSettings
from app.fileio import write_atomic
from app.paths import config_dir
from app.templates.base import TemplateDefaults


class ModelChoice(BaseModel):
    """What the user chose for one model; None means "the template's default"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    template: str | None = None
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    top_k: int | None = Field(None, ge=0)
    repetition_penalty: float | None = Field(None, ge=0.5, le=2.0)
    gpu_layers: Literal["auto", "all"] | Annotated[int, Field(ge=0)] | None = None  # None: auto
    flash_attn: bool | None = None
    kv_type: Literal["f16", "q8_0"] | None = None
    context_length: int | None = Field(None, ge=256, le=1_048_576)  # None: the settings'
    speculative: Literal["off", "lookup", "draft"] | None = None  # None: prompt lookup
    draft_model: str | None = None  # a GGUF with the model's vocabulary (for "draft")
    projector: str | None = None  # its mmproj GGUF ("": none; None: the one in its folder)

    def merged(self, newer: ModelChoice) -> ModelChoice:
        """These choices with every value `newer` sets replacing ours."""
        return self.model_copy(update=newer.model_dump(exclude_none=True))

    def apply(self, defaults: TemplateDefaults) -> TemplateDefaults:
        """The template's defaults with these choices on top."""
        values = self.model_dump(exclude_none=True, exclude={"template", *_LOAD})
        return defaults.model_copy(update=values)

    def load_settings(self, default_gpu: str = "auto") -> LoadSettings:
        """How the model is to be loaded (f16 cache unless chosen; GPU layers as chosen for
        this model, else `default_gpu`: the settings' "auto", "all" or "none")."""
        layers = self.gpu_layers if self.gpu_layers is not None else default_gpu
        layers = 0 if layers == "none" else layers
        gpu_layers = None if layers in (None, "auto") else -1 if layers == "all" else int(layers)
        return LoadSettings(
            gpu_layers=gpu_layers,
            flash_attn=bool(self.flash_attn),
            kv_type=self.kv_type or "f16",
            speculative=self.speculative or "lookup",
            draft_model=self.draft_model or "",
        )


_LOAD = {"gpu_layers", "flash_attn", "kv_type", "context_length", "speculative", "draft_model",
         "projector"}  # fmt: skip


class ChoiceStore:
    """The remembered choices of every model, keyed by the model file's absolute path."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or config_dir() / "models.json"

    def _all(self) -> dict[str, dict[str, object]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, model: str | Path) -> ModelChoice:
        raw = self._all().get(str(Path(model).resolve()))
        try:
            return ModelChoice.model_validate(raw) if isinstance(raw, dict) else ModelChoice()
        except ValidationError:
            return ModelChoice()

    def remember(
        self, model: str | Path, choice: ModelChoice, *, whole: bool = False
    ) -> ModelChoice:
        """Merge `choice` into what is stored for `model` (or store it instead, `whole`);
        return the result."""
        merged = choice if whole else self.get(model).merged(choice)
        data = self._all()
        data[str(Path(model).resolve())] = merged.model_dump(exclude_none=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(data, indent=2, sort_keys=True) + "\n")
        return merged
