"""The user's settings: one pydantic model, saved atomically as JSON in the config folder.

Guarantees: values are validated (a bad value in the file is reported and the default used, the
rest kept; an invalid endpoint is left out, the others kept; the file as written is first copied
to `settings.json.invalid`, so nothing the user wrote is lost); writes go to a temporary file,
are fsynced and renamed over the old one; the model forbids unknown fields, and it has no field
for secrets: API keys live in the OS keyring only.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.domain.budget import OverflowName
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
    model_folders: tuple[str, ...] = Field(
        (), description="Folders searched for GGUF models besides the default models folder."
    )
    default_model: str | None = Field(
        None, description="The model loaded at start (None: the bundled default model)."
    )
    context_length: int = Field(
        4096,
        ge=256,
        le=1_048_576,
        description="Context (tokens) models are loaded with, unless a model has its own"
        " (File ▸ Model settings…).",
    )
    max_downloads: int = Field(
        2, ge=1, le=8, description="Model downloads running at once; the others wait."
    )
    theme: Literal["system", "light", "dark"] = Field(
        "system", description="Light or dark, or as the system is set (it follows changes)."
    )
    font_size: int = Field(
        0, ge=0, le=32, description="Text size in points (0: as the system sets it)."
    )
    reasoning_effort: Literal["default", "low", "medium", "high"] = Field(
        "default", description="Reasoning effort new messages start with (gpt-oss models)."
    )
    max_tokens: int = Field(1024, ge=16, le=131_072, description="Longest answer, in tokens.")
    overflow: OverflowName = Field(
        "stop",
        description="When a conversation outgrows the context (stop: say so; drop-middle: leave"
        " out the oldest exchanges after the first; rolling: leave out the oldest exchanges);"
        " each conversation can choose its own.",
    )
    kv_cache_gib: int = Field(
        2,
        ge=0,
        le=1024,
        description="Disk space for what models read of your conversations, so that reopening"
        " one after a restart does not read it again; the least recently used goes first"
        " (0: keep none on disk).",
    )
    parallel: int = Field(
        4,
        ge=1,
        le=16,
        description="Answers the model works on at once: one is kept for this window, the rest"
        " serve the local server's clients side by side; each holds its own context, so the"
        " conversation cache in memory grows with it (1: one answer at a time).",
    )
    threads: int = Field(
        0, ge=0, le=256, description="Generation threads (0: the physical cores less one)."
    )
    gpu_layers: Literal["auto", "all", "none"] = Field(
        "auto",
        description="Layers on the GPU for models without their own choice (auto: all, where"
        " llama.cpp can offload).",
    )

    def endpoint(self, name: str) -> Endpoint | None:
        return next((e for e in self.endpoints if e.name == name), None)

    def without_endpoint(self, name: str) -> Settings:
        return self.model_copy(
            update={"endpoints": tuple(e for e in self.endpoints if e.name != name)}
        )

    def with_endpoint(self, endpoint: Endpoint) -> Settings:
        """These settings with `endpoint` added, or replacing the one of the same name."""
        kept = self.without_endpoint(endpoint.name).endpoints
        return self.model_copy(update={"endpoints": (*kept, endpoint)})


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
        if isinstance(exc, ValueError):
            _keep_copy(path)
        return Settings()
    if not isinstance(raw, dict):
        _keep_copy(path)
        return Settings()
    kept = dict(raw)
    if isinstance(kept.get("endpoints"), list):  # one bad endpoint does not drop the others
        endpoints = [e for e in kept["endpoints"] if _valid_endpoint(e)]
        if len(endpoints) < len(kept["endpoints"]):
            log.warning("some endpoints in %s are invalid and were left out", path)
            _keep_copy(path)
        kept["endpoints"] = endpoints
    while True:
        try:
            return Settings.model_validate(kept)
        except ValidationError as exc:
            bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
            log.warning("settings %s in %s are invalid; using their defaults", sorted(bad), path)
            _keep_copy(path)
            if not bad & kept.keys():
                return Settings()
            kept = {k: v for k, v in kept.items() if k not in bad}


def _valid_endpoint(value: object) -> bool:
    try:
        Endpoint.model_validate(value)
    except ValidationError:
        return False
    return True


def _keep_copy(path: Path) -> None:
    """Keep the file as the user wrote it (`settings.json.invalid`) before it is ever
    rewritten without its bad parts."""
    copy = path.with_name(path.name + ".invalid")
    try:
        write_atomic(copy, path.read_bytes().decode("utf-8", errors="replace"))
    except OSError as exc:
        log.warning("could not keep a copy of %s (%s)", path, exc)


def save_settings(settings: Settings, path: Path | None = None) -> None:
    path = path or settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, settings.model_dump_json(indent=1))
