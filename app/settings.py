"""The user's settings: one pydantic model, saved atomically as JSON in the config folder.

Guarantees: values are validated (a bad value in the file is reported and the default used, the
rest kept); writes go to a temporary file, are fsynced and renamed over the old one; the model
forbids unknown fields, and it has no field for secrets: API keys live in the OS keyring only.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.domain.endpoint import Endpoint
from app.fileio import write_atomic
from app.paths import config_dir

log = logging.getLogger("store")


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    trash_retention_days: int = Field(
        30, ge=1, le=3650, description="Deleted conversations are removed for good after this."
    )
    endpoints: tuple[Endpoint, ...] = Field(
        (), description="Remote OpenAI-compatible endpoints (their keys are in the keyring)."
    )

    def endpoint(self, name: str) -> Endpoint | None:
        return next((e for e in self.endpoints if e.name == name), None)


def settings_path() -> Path:
    return config_dir() / "settings.json"


def load_settings(path: Path | None = None) -> Settings:
    """The saved settings; a missing file gives the defaults, a bad value its default."""
    path = path or settings_path()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Settings()
    except (OSError, ValueError) as exc:
        log.warning("settings file %s is unreadable (%s); using the defaults", path, exc)
        return Settings()
    if not isinstance(raw, dict):
        return Settings()
    kept = dict(raw)
    while True:
        try:
            return Settings.model_validate(kept)
        except ValidationError as exc:
            bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
            log.warning("settings %s in %s are invalid; using their defaults", sorted(bad), path)
            if not bad & kept.keys():
                return Settings()
            kept = {k: v for k, v in kept.items() if k not in bad}


def save_settings(settings: Settings, path: Path | None = None) -> None:
    path = path or settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, settings.model_dump_json(indent=1))
