"""Per-model choices the user made (template, sampling values, how the model is loaded: GPU
layers, flash attention, cache type, context length), remembered across runs.

Guarantees: stored as JSON in the per-user config folder (`HARMONY_DESK_CONFIG` overrides it),
written atomically; a missing or damaged file reads as "no choices" and is never fatal; values
are validated with the same bounds as the template defaults; each choice is declared once, with
how Model settings shows it and whether it applies at the next load (`Shown`,
`app/domain/declared.py`): the choices that do are the ones `apply` leaves to the loader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, ValidationError

from app.domain.declared import Declared, SettingsPage, Shown, settings_of
from app.domain.placement import LoadSettings
from app.domain.sampling import Sampling
from app.fileio import write_atomic
from app.paths import config_dir
from app.readback import read_back
from app.templates.base import TemplateDefaults

MODEL_SETTINGS = SettingsPage("Model settings", ("Chat template", "Sampling", "Context", "Loading"))
CHOICES_LIMIT = 16 << 20  # bytes: a few hundred bytes a model
SPECULATIVE_WORDS = (("off", "Off"), ("lookup", "Prompt lookup"), ("draft", "Draft model"))


class ModelChoice(Declared):
    """What the user chose for one model; None means "the template's default". Each field is
    declared once, with how Model settings shows it (`Shown`); `reload`: it applies when the
    model is next loaded."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    template: Annotated[str | None, Shown("Template", MODEL_SETTINGS, "Chat template")] = Field(
        None,
        description="How messages are written for this model; its sampling values come with it.",
    )
    temperature: Annotated[
        float | None, Shown("Temperature", MODEL_SETTINGS, "Sampling", step=0.05)
    ] = Field(None, ge=0.0, le=2.0)
    top_p: Annotated[float | None, Shown("Top p", MODEL_SETTINGS, "Sampling", step=0.05)] = Field(
        None, gt=0.0, le=1.0
    )
    top_k: Annotated[
        int | None, Shown("Top k", MODEL_SETTINGS, "Sampling", zero="off", high=1000)
    ] = Field(None, ge=0)
    repetition_penalty: Annotated[
        float | None, Shown("Repetition penalty", MODEL_SETTINGS, "Sampling", step=0.05)
    ] = Field(None, ge=0.5, le=2.0)
    gpu_layers: Annotated[  # None: auto
        Literal["auto", "all"] | Annotated[int, Field(ge=0)] | None,
        Shown("GPU layers", MODEL_SETTINGS, "Loading", reload=True),
    ] = Field(None, description="Automatic puts every layer on the GPU where it fits.")
    flash_attn: Annotated[
        bool | None, Shown("Flash attention", MODEL_SETTINGS, "Loading", reload=True)
    ] = None
    kv_type: Annotated[
        Literal["f16", "q8_0"] | None, Shown("KV cache", MODEL_SETTINGS, "Loading", reload=True)
    ] = Field(None, description="q8_0 halves the cache's memory and turns flash attention on.")
    context_length: Annotated[  # None: the settings'
        int | None,
        Shown("Context length", MODEL_SETTINGS, "Context", unit=" tokens", step=1024, reload=True),
    ] = Field(
        None,
        ge=256,
        le=1_048_576,
        description="How much of the conversation the model reads at once; more takes more memory.",
    )
    speculative: Annotated[  # None: prompt lookup
        Literal["off", "lookup", "draft"] | None,
        Shown(
            "Speculative decoding",
            MODEL_SETTINGS,
            "Loading",
            words=SPECULATIVE_WORDS,
            reload=True,
        ),
    ] = None
    draft_model: Annotated[  # a GGUF with the model's vocabulary (for "draft")
        str | None, Shown("Draft model", MODEL_SETTINGS, "Loading", reload=True)
    ] = None
    projector: Annotated[  # its mmproj GGUF ("": none; None: the one in its folder)
        str | None, Shown("Projector (images)", MODEL_SETTINGS, "Loading", reload=True)
    ] = None

    @classmethod
    def in_use(cls, template: str, sampling: Sampling) -> ModelChoice:
        """The template and the sampling values in use, as choices that set each of them."""
        return cls(
            template=template,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            top_k=sampling.top_k,
            repetition_penalty=sampling.repeat_penalty,
        )

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


_LOAD = frozenset(s.name for s in settings_of(ModelChoice) if s.shown.reload)  # at the next load


class ChoiceStore:
    """The remembered choices of every model, keyed by the model file's absolute path."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or config_dir() / "models.json"

    def _all(self) -> dict[str, dict[str, object]]:
        data = read_back(self.path, CHOICES_LIMIT)
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
