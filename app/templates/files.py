"""Template files: LMDeploy-style chat templates the user writes, in JSON or YAML.

Guarantees: `read_spec(path)` gives the file's `LayoutSpec` resolved over its `base` (a built-in
layout, or another template already registered from a file) or raises `TemplateFileError`
naming the file and each field that is wrong (unknown, wrong type, out of range); a chat
template must end up with at least one stop word; `templates_folder()` is `templates/` in the
config folder, read once per process by the registry, where each bad file is a problem said
(`folder_problems`), never a reason not to start.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.errors import HarmonyDeskError, validation_problems
from app.paths import config_dir
from app.templates.base import Capability
from app.templates.layout import BUILTIN_LAYOUTS, LayoutSpec

SUFFIXES = (".json", ".yaml", ".yml")


class TemplateFileError(HarmonyDeskError):
    """A template file that cannot be used: which file, which field, why."""


def templates_folder() -> Path:
    return config_dir() / "templates"


def _load(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise TemplateFileError(f"{path}: cannot be read ({exc})") from exc
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise TemplateFileError(f"{path}: not valid YAML: {exc}") from exc
    try:
        return json.loads(text)
    except ValueError as exc:
        raise TemplateFileError(f"{path}: not valid JSON: {exc}") from exc


def read_spec(path: Path, layouts: Callable[[str], LayoutSpec | None] | None = None) -> LayoutSpec:
    """The file's template, resolved over its base (see the module guarantees); `layouts`
    finds a base by name besides the built-in ones (the templates already read from files)."""
    data = _load(path)
    if not isinstance(data, dict):
        raise TemplateFileError(f"{path}: a template file holds one object of fields")
    try:
        spec = LayoutSpec.model_validate(data)
    except ValidationError as exc:
        raise TemplateFileError(f"{path}: {validation_problems(exc)}") from exc
    if spec.base is not None:
        base = BUILTIN_LAYOUTS.get(spec.base) or (layouts(spec.base) if layouts else None)
        if base is None:
            known = ", ".join(sorted(BUILTIN_LAYOUTS))
            raise TemplateFileError(
                f"{path}: base: no template {spec.base!r} can be extended (built-in layouts:"
                f" {known}, or a template file's model_name)"
            )
        spec = spec.over(base)
    if (spec.capability or Capability.CHAT) is Capability.CHAT and not spec.stop_words:
        raise TemplateFileError(
            f"{path}: stop_words: a chat template needs at least one stop word (the text that"
            " ends the assistant's turn, usually its eoa)"
        )
    return spec


def folder_files(folder: Path | None = None) -> list[Path]:
    folder = folder or templates_folder()
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in SUFFIXES and p.is_file())


__all__ = ["TemplateFileError", "folder_files", "read_spec", "templates_folder"]
