"""The Settings dialog's side: the settings model's fields as the dialog shows them, and saving.

Guarantees: the dialog is built from the settings model itself (each field's description,
its choices or bounds), so a new setting appears without dialog code; values are validated by
the same model before anything is written (an invalid value is refused with the field's name
and the file is untouched); saving is the settings store's atomic write; the data folder is
shown, never edited.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.paths import data_dir
from app.settings import Settings, load_settings, save_settings

SHOWN = (
    "theme", "font_size", "reasoning_effort", "context_length", "max_tokens", "threads",
    "gpu_layers", "parallel", "trash_retention_days", "max_downloads", "overflow", "kv_cache_gib",
)  # fmt: skip


@dataclass(frozen=True)
class Field:
    """One setting as the dialog shows it."""

    name: str
    label: str
    description: str
    kind: str  # "choice" or "number"
    value: Any
    choices: tuple[str, ...] = ()
    low: int = 0
    high: int = 0


def _bounds(metadata: list[Any]) -> tuple[int, int]:
    low, high = 0, 1_000_000
    for m in metadata:
        low = int(getattr(m, "ge", low) if getattr(m, "ge", None) is not None else low)
        high = int(getattr(m, "le", high) if getattr(m, "le", None) is not None else high)
    return low, high


def fields(settings: Settings | None = None) -> list[Field]:
    """The shown settings, with their current values."""
    settings = settings or load_settings()
    out = []
    for name in SHOWN:
        info = Settings.model_fields[name]
        label = name.replace("_", " ").capitalize()
        value = getattr(settings, name)
        if typing.get_origin(info.annotation) is typing.Literal:
            choices = tuple(str(c) for c in typing.get_args(info.annotation))
            out.append(Field(name, label, info.description or "", "choice", value, choices))
        else:
            low, high = _bounds(info.metadata)
            out.append(Field(name, label, info.description or "", "number", value, low=low,
                             high=high))  # fmt: skip
    return out


def save(values: dict[str, Any]) -> Settings:
    """Validate and save `values` over the current settings (a `ValueError` names what is wrong)."""
    current = load_settings()
    try:
        updated = Settings.model_validate({**current.model_dump(), **values})
    except ValidationError as exc:
        wrong = ", ".join(".".join(str(p) for p in e["loc"]) for e in exc.errors())
        raise ValueError(f"not saved: {wrong} is not a valid value") from None
    save_settings(updated)
    return updated


def data_folder() -> Path:
    return data_dir()


def current() -> Settings:
    return load_settings()


__all__ = ["SHOWN", "Field", "current", "data_folder", "fields", "save"]
