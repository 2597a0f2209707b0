"""Template files: LMDeploy-style chat templates the user writes, in JSON or YAML.

Guarantees: `read_spec(path)` gives the file's `LayoutSpec` resolved over its `base` (a built-in
layout, or another template already registered from a file) or raises `TemplateFileError`
naming the file and each field that is wrong (unknown, wrong type, out of range); a chat
template must end up with at least one stop word, and at most `MAX_STOP_WORDS` of at most
`MAX_STOP_WORD_CHARS` characters each. A file is read within hard bounds, so `check` and use
refuse the same files, quickly: at most `MAX_FILE_BYTES`, YAML with at most `MAX_ALIASES`
aliases, values nested at most `MAX_DEPTH` deep, at most `MAX_FILE_BYTES` characters of text
and half as many values with aliases expanded — past any, a `TemplateFileError` naming the
file. `templates_folder()` is `templates/` in the config folder, read once per process by the
registry, where each bad file is a problem said (`folder_problems`), never a reason not to
start.
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
MAX_FILE_BYTES = 256 * 1024  # a file, and the text its values hold once YAML aliases are expanded
MAX_ALIASES = 64
MAX_DEPTH = 16
MAX_STOP_WORDS = 16
MAX_STOP_WORD_CHARS = 256


class TemplateFileError(HarmonyDeskError):
    """A template file that cannot be used: which file, which field, why."""


def templates_folder() -> Path:
    return config_dir() / "templates"


def _yaml(text: str) -> Any:
    """`text` read as YAML (safe types) with at most `MAX_ALIASES` aliases, refused as soon as
    it nests deeper than `MAX_DEPTH` (before the rest of the file is read)."""
    import yaml

    class Loader(yaml.SafeLoader):
        aliases = 0
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                self.aliases += 1
                if self.aliases > MAX_ALIASES:
                    raise TemplateFileError(f"uses more than {MAX_ALIASES} YAML aliases")
            self.depth += 1
            if self.depth > MAX_DEPTH + 1:
                raise TemplateFileError(f"nests values more than {MAX_DEPTH} deep")
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    loader = Loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _check_size(data: Any) -> None:
    """`TemplateFileError` for data nested deeper than `MAX_DEPTH` or holding more than
    `MAX_FILE_BYTES` characters of text or half as many values (aliases expanded)."""
    waiting: list[tuple[Any, int]] = [(data, 0)]
    chars = nodes = 0
    while waiting:
        value, depth = waiting.pop()
        nodes += 1
        if depth > MAX_DEPTH:
            raise TemplateFileError(f"nests values more than {MAX_DEPTH} deep")
        if isinstance(value, dict):
            waiting += [(k, depth + 1) for k in value] + [(v, depth + 1) for v in value.values()]
        elif isinstance(value, list):
            waiting += [(v, depth + 1) for v in value]
        elif isinstance(value, str):
            chars += len(value)
        if chars > MAX_FILE_BYTES or nodes + len(waiting) > MAX_FILE_BYTES // 2:
            raise TemplateFileError(f"holds more than {MAX_FILE_BYTES:,} characters of values")


def _parsed(path: Path, text: str) -> Any:
    if path.suffix.lower() not in (".yaml", ".yml"):
        return json.loads(text)
    import yaml

    try:
        return _yaml(text)
    except yaml.YAMLError as exc:
        raise TemplateFileError(f"not valid YAML: {exc}") from exc


def _load(path: Path) -> Any:
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            raise TemplateFileError(f"is larger than {MAX_FILE_BYTES:,} bytes")
        text = raw.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise TemplateFileError(f"{path}: cannot be read ({exc})") from exc
    except TemplateFileError as exc:
        raise TemplateFileError(f"{path}: {exc.message}") from exc
    try:
        data = _parsed(path, text)
        _check_size(data)
    except TemplateFileError as exc:
        raise TemplateFileError(f"{path}: {exc.message}") from exc
    except ValueError as exc:
        raise TemplateFileError(f"{path}: not valid JSON: {exc}") from exc
    except (RecursionError, MemoryError) as exc:
        raise TemplateFileError(f"{path}: nests values more than {MAX_DEPTH} deep") from exc
    return data


def _check_stop_words(path: Path, words: tuple[str, ...]) -> None:
    if len(words) > MAX_STOP_WORDS:
        raise TemplateFileError(
            f"{path}: stop_words: {len(words)} given; a template may have {MAX_STOP_WORDS}"
        )
    for word in words:
        if len(word) > MAX_STOP_WORD_CHARS:
            raise TemplateFileError(
                f"{path}: stop_words: {word[:20]!r}… is longer than {MAX_STOP_WORD_CHARS}"
                " characters"
            )


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
    _check_stop_words(path, spec.stop_words or ())
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
