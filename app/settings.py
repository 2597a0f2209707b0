"""The user's settings: one pydantic model, saved atomically as JSON in the config folder.

Guarantees: values are validated (a bad value in the file is reported and the default used, the
rest kept; an invalid endpoint is left out, the others kept; the file as written is first copied
to `settings.json.invalid`, so nothing the user wrote is lost); a file that cannot be read as
settings at all (not a regular file, too large, not JSON, nested too deep, not an object) gives
the defaults and is set aside, never a crash or a hang (`app/readback.py`); writes go to a
temporary file, are fsynced and renamed over the old one; the model forbids unknown fields, and
it has no field for secrets: API keys live in the OS keyring only. Each setting is declared
once, here: its type, default, bounds and help, and how it is shown (`Shown`: label, unit, page
and section or none, what 0 means, whether it applies at the next load); a field without that
declaration is refused when the module loads (`app/domain/declared.py`), and the Settings
dialog, the terminal and the consumers read the declaration instead of naming the setting again.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, ValidationError

from app.domain.budget import Overflow, OverflowName
from app.domain.declared import Declared, SettingsPage, Shown
from app.domain.endpoint import Endpoint
from app.errors import HarmonyDeskError
from app.fileio import write_atomic
from app.inputs import read_text_file
from app.paths import config_dir
from app.readback import read_back, set_aside

log = logging.getLogger("store")
SETTINGS_LIMIT = 8 << 20  # bytes: a settings file is a few kilobytes


APPEARANCE = SettingsPage("Appearance", ("Look",), "palette-outline")
CHAT = SettingsPage("Chat", ("New messages",), "chat-outline")
MODEL = SettingsPage(
    "Model & performance", ("Loading a model", "Generation", "Downloads", "Local server"), "chip"
)
PRIVACY = SettingsPage(
    "Privacy & data", ("Deleted chats", "Conversation cache"), "shield-lock-outline"
)
PAGES = (APPEARANCE, CHAT, MODEL, PRIVACY)  # the Settings dialog's pages, in order
GPU_WORDS = (("auto", "automatic"), ("all", "all layers"), ("none", "none (CPU only)"))


class Settings(Declared):
    """Each field is declared once: type, default, bounds and help (`Field`), and how it is
    shown (`Shown`: label, page and section, unit, what 0 means, whether it applies at the
    next load). A field's sections order its page; within a section, the fields' order here."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trash_retention_days: Annotated[
        int, Shown("Keep deleted chats", PRIVACY, "Deleted chats", unit=" days")
    ] = Field(
        30, ge=1, le=3650, description="Deleted conversations are removed for good after this."
    )
    endpoints: Annotated[tuple[Endpoint, ...], Shown("Endpoints", None)] = Field(
        (), description="Remote OpenAI-compatible endpoints (their keys are in the keyring)."
    )
    model_folders: Annotated[tuple[str, ...], Shown("Model folders", None)] = Field(
        (), description="Folders searched for GGUF models besides the default models folder."
    )
    default_model: Annotated[str | None, Shown("Default model", None)] = Field(
        None, description="The model loaded at start (None: the bundled default model)."
    )
    context_length: Annotated[
        int,
        Shown("Context length", MODEL, "Loading a model", unit=" tokens", step=1024, reload=True),
    ] = Field(
        4096,
        ge=256,
        le=1_048_576,
        description="Context (tokens) models are loaded with, unless a model has its own"
        " (File ▸ Model settings…).",
    )
    max_downloads: Annotated[int, Shown("Downloads at once", MODEL, "Downloads")] = Field(
        2, ge=1, le=8, description="Model downloads running at once; the others wait."
    )
    theme: Annotated[Literal["system", "light", "dark"], Shown("Theme", APPEARANCE, "Look")] = (
        Field("system", description="Light or dark, or as the system is set (it follows changes).")
    )
    font_size: Annotated[
        int, Shown("Text size", APPEARANCE, "Look", unit=" pt", zero="System default")
    ] = Field(0, ge=0, le=32, description="Text size in points (0: as the system sets it).")
    reasoning_effort: Annotated[
        Literal["default", "low", "medium", "high"],
        Shown("Reasoning effort", CHAT, "New messages"),
    ] = Field("default", description="Reasoning effort new messages start with (gpt-oss models).")
    max_tokens: Annotated[
        int, Shown("Longest answer", CHAT, "New messages", unit=" tokens", step=256)
    ] = Field(1024, ge=16, le=131_072, description="Longest answer, in tokens.")
    overflow: Annotated[
        OverflowName,
        Shown(
            "When the context is full",
            CHAT,
            "New messages",
            words=tuple((p.value, p.said) for p in Overflow),
        ),
    ] = Field(
        "summarise",
        description="When a conversation outgrows the context (stop: say so; drop-middle: leave"
        " out the oldest exchanges after the first; rolling: leave out the oldest exchanges;"
        " summarise: the model summarises the older exchanges, which you can undo); each"
        " conversation can choose its own.",
    )
    compact_at_percent: Annotated[
        int, Shown("Summarise past", CHAT, "New messages", unit=" % of the context")
    ] = Field(
        80,
        ge=50,
        le=95,
        description="Under summarise, the older exchanges are summarised when the conversation"
        " with the answer's reserve would pass this share of the context.",
    )
    keep_recent_percent: Annotated[
        int, Shown("Keep verbatim", CHAT, "New messages", unit=" % of the room")
    ] = Field(
        40,
        ge=10,
        le=80,
        description="When a conversation is summarised, the most recent exchanges that fit in"
        " this share of the room stay as they were written.",
    )
    kv_cache_gib: Annotated[
        int,
        Shown(
            "Conversation cache",
            PRIVACY,
            "Conversation cache",
            unit=" GiB",
            zero="None",
            reload=True,
        ),
    ] = Field(
        2,
        ge=0,
        le=1024,
        description="Disk space for what models read of your conversations, so that reopening"
        " one after a restart does not read it again; the least recently used goes first"
        " (0: keep none on disk).",
    )
    parallel: Annotated[int, Shown("Answers at once", MODEL, "Loading a model", reload=True)] = (
        Field(
            4,
            ge=1,
            le=16,
            description="Answers the model works on at once: one is kept for this window, the rest"
            " serve the local server's clients side by side; each holds its own context, so the"
            " conversation cache in memory grows with it (1: one answer at a time).",
        )
    )
    threads: Annotated[
        int, Shown("Threads", MODEL, "Generation", zero="Automatic", reload=True)
    ] = Field(0, ge=0, le=256, description="Generation threads (0: the physical cores less one).")
    gpu_layers: Annotated[
        Literal["auto", "all", "none"],
        Shown("GPU layers", MODEL, "Loading a model", words=GPU_WORDS, reload=True),
    ] = Field(
        "auto",
        description="Layers on the GPU for models without their own choice (auto: all, where"
        " llama.cpp can offload).",
    )

    server_idle_minutes: Annotated[
        int, Shown("Unload idle models after", MODEL, "Local server", unit=" min", zero="Never")
    ] = Field(
        15,
        ge=0,
        le=10_080,
        description="A model the local server loaded for a client is unloaded when no request"
        " has used it for this long (0: kept until the server stops); the server's own model"
        " and pinned ones stay.",
    )
    server_aliases: Annotated[tuple[str, ...], Shown("Model names", None)] = Field(
        ("*=",),
        description="Names clients ask for, as PATTERN=MODEL (MODEL empty: the server's default"
        " model), tried in order; without `*=` a name the server does not serve is refused.",
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
    """The saved settings; a missing file gives the defaults, a bad value its default, a file
    that cannot be read as settings the defaults (it is set aside: `app/readback.py`)."""
    path = path or settings_path()
    raw = read_back(path, SETTINGS_LIMIT)
    if raw is None:
        return Settings()
    if not isinstance(raw, dict):
        set_aside(path, "it holds no settings object")
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
        write_atomic(copy, read_text_file(path, SETTINGS_LIMIT, follow=False))
    except (HarmonyDeskError, OSError) as exc:
        log.warning("could not keep a copy of %s (%s)", path, exc)


def save_settings(settings: Settings, path: Path | None = None) -> None:
    path = path or settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, settings.model_dump_json(indent=1))
