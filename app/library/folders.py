"""Where the library looks for models, which one starts by default, and deleting one.

Guarantees: the default models folder is `models/` in the per-user data folder (created when
first needed); the folders a user adds are kept in `settings.json`, in the order added,
without duplicates; the start-up model is the user's default while its file exists (else the
bundled model, with the reason logged); deleting a model moves every part of it to the
desktop's trash (never a silent unlink) and refuses the bundled model.
"""

from __future__ import annotations

import logging
from pathlib import Path

from app.domain.library import ModelEntry
from app.errors import HarmonyDeskError
from app.gguf.info import read_model
from app.paths import data_dir
from app.settings import Settings

log = logging.getLogger("library")


class LibraryError(HarmonyDeskError):
    """A library action that cannot be done (a folder that is not one, a model in use...)."""


def models_dir() -> Path:
    """The default models folder (downloads land here unless another is chosen)."""
    return data_dir() / "models"


def library_folders(settings: Settings) -> list[Path]:
    """The default models folder, then the folders the user added."""
    folders: list[Path] = []
    for folder in (models_dir(), *(Path(f).expanduser() for f in settings.model_folders)):
        if folder not in folders:
            folders.append(folder)
    return folders


def with_folder(settings: Settings, folder: str | Path) -> Settings:
    path = Path(folder).expanduser().resolve()
    if not path.is_dir():
        raise LibraryError(f"{path} is not a folder")
    if str(path) in settings.model_folders or path == models_dir():
        return settings
    return settings.model_copy(update={"model_folders": (*settings.model_folders, str(path))})


def without_folder(settings: Settings, folder: str | Path) -> Settings:
    path = str(Path(folder).expanduser().resolve())
    kept = tuple(f for f in settings.model_folders if f not in (path, str(folder)))
    return settings.model_copy(update={"model_folders": kept})


def startup_model(settings: Settings) -> str | None:
    """The model to load at start: the user's default while its file exists; None: bundled."""
    chosen = settings.default_model
    if chosen and not Path(chosen).is_file():
        log.warning("the default model %s is not there any more; using the bundled one", chosen)
        return None
    return chosen


def set_default(settings: Settings, path: str | Path | None) -> Settings:
    """Settings with `path` (a readable model; None: the bundled one) as the start-up model."""
    if path is None:
        return settings.model_copy(update={"default_model": None})
    chosen = Path(path).expanduser().absolute()
    read_model(chosen)  # a clear error now rather than a failed start later
    return settings.model_copy(update={"default_model": str(chosen)})


def trash_model(entry: ModelEntry) -> list[str]:
    """Move the model's files to the desktop's trash; the paths moved."""
    if entry.bundled:
        raise LibraryError(
            "the bundled default model cannot be deleted (it is rebuilt from the app's packages)"
        )
    from send2trash import send2trash
    from send2trash.exceptions import TrashPermissionError

    moved = []
    for name in entry.files:
        if not Path(name).exists():
            continue
        try:
            send2trash(name)
        except (OSError, TrashPermissionError) as exc:
            raise LibraryError(f"{name} could not be moved to the trash ({exc})") from exc
        moved.append(name)
    return moved
