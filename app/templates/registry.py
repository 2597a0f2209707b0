"""The template registry: names to template classes, refusing silent overwrites.

The built-in templates are registered here, explicitly, by importing their classes (no import
side effects, no cycle: a template module never imports the registry). `register_template`
adds another class; a second registration of the same name raises with how to replace it on
purpose (`replace=True`); an unknown name raises with the valid names. Template files
(`app/templates/files.py`) are registered by `register_file` — `--chat-template FILE`, and the
config folder's `templates/`, read the first time the registry is asked for a name: a file may
not take a name already registered (it may extend one with `"base"`), and a bad file in the
folder is a problem kept for `folder_problems`, the others still registered. `template_source`
says where each entry came from. `default_template_name` picks a template from GGUF metadata:
a model whose architecture is gpt-oss, or whose chat template is gpt-oss's (`harmony_source`,
whatever architecture it declares), gets `harmony`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from app.errors import HarmonyDeskError
from app.templates.base import Template
from app.templates.builtin import ChatML, Completion, Gemma, Llama3, Qwen, SmolLM2
from app.templates.families import Mistral, Qwen3Coder
from app.templates.files import TemplateFileError, folder_files, read_spec
from app.templates.harmony import HarmonyTemplate
from app.templates.jinja import GgufJinja, harmony_source
from app.templates.layout import INTERNLM_TEMPLATES, LayoutSpec, LayoutTemplate, layout_template

T = TypeVar("T", bound=type[Template])
BUILTINS: tuple[type[Template], ...] = (
    HarmonyTemplate,
    ChatML,
    SmolLM2,
    Qwen,
    Gemma,
    Llama3,
    Completion,
    GgufJinja,
    *INTERNLM_TEMPLATES,
    Mistral,
    Qwen3Coder,
)
_REGISTRY: dict[str, type[Template]] = {cls.name: cls for cls in BUILTINS}
_SOURCES: dict[str, str] = {cls.name: "built-in" for cls in BUILTINS}
_FOLDER: dict[str, list[str]] = {}  # "problems" once the templates folder was read


class TemplateError(HarmonyDeskError):
    """An unknown or doubly registered template name."""


def register_template(name: str, *, replace: bool = False) -> Callable[[T], T]:
    """Class decorator: register a template under `name`."""

    def add(cls: T) -> T:
        if name in _REGISTRY and not replace:
            raise TemplateError(
                f"a template named {name!r} is already registered ({_REGISTRY[name].__name__});"
                " pass replace=True to register_template to replace it on purpose"
            )
        cls.name = name
        _REGISTRY[name] = cls
        _SOURCES[name] = "registered in code"
        return cls

    return add


def layout_of(name: str) -> LayoutSpec | None:
    """The layout of the template called `name`, when it has one (a file may extend it)."""
    cls = _REGISTRY.get(name)
    return cls.spec if isinstance(cls, type) and issubclass(cls, LayoutTemplate) else None


def register_file(path: Path) -> str:
    """Register the template in `path`; its name. `TemplateFileError` for a bad file,
    `TemplateError` for a name already taken."""
    spec = read_spec(path, layout_of)
    name = spec.model_name
    if name in _REGISTRY:
        if _SOURCES.get(name) == str(path):
            return name  # the same file again
        raise TemplateError(
            f"{path}: model_name: a template named {name!r} already exists"
            f" ({_SOURCES.get(name, 'built-in')}); a file may not replace it — give the file"
            f' another model_name, or extend it with "base": "{name}"'
        )
    _REGISTRY[name] = layout_template(spec)
    _SOURCES[name] = str(path)
    return name


def _read_folder() -> None:
    """The config folder's template files, once; a bad one is kept as a problem."""
    if "problems" in _FOLDER:
        return
    problems: list[str] = []
    waiting = folder_files()
    while waiting:  # a file may extend another: each pass registers what it can
        left: list[tuple[Path, str]] = []
        for path in waiting:
            try:
                register_file(path)
            except (TemplateFileError, TemplateError) as exc:
                left.append((path, exc.message))
        if len(left) == len(waiting):
            problems += [why for _, why in left]
            break
        waiting = [path for path, _ in left]
    _FOLDER["problems"] = problems


def forget_files() -> None:
    """Unregister every template read from a file; the folder is read again when next asked."""
    for name in [
        n for n, source in _SOURCES.items() if source not in ("built-in", "registered in code")
    ]:
        _REGISTRY.pop(name, None)
        _SOURCES.pop(name, None)
    _FOLDER.clear()


def folder_problems() -> list[str]:
    """What was wrong with the template files in the config folder (each file said)."""
    _read_folder()
    return list(_FOLDER["problems"])


def template_source(name: str) -> str:
    """Where the template called `name` came from: "built-in", or its file."""
    _read_folder()
    return _SOURCES.get(name, "")


def template_names() -> list[str]:
    _read_folder()
    return sorted(_REGISTRY)


def get_template(name: str) -> Template:
    """A new instance of the template called `name`."""
    _read_folder()
    cls = _REGISTRY.get(name)
    if cls is None:
        raise TemplateError(
            f"no chat template is called {name!r}; valid names: {', '.join(sorted(_REGISTRY))}"
        )
    return cls()


def default_template_name(metadata: dict[str, Any]) -> str:
    """The template the registry picks for a model, from its GGUF metadata."""
    arch = str(metadata.get("general.architecture", ""))
    text = metadata.get("tokenizer.chat_template")
    if arch == "gpt-oss" or (isinstance(text, str) and harmony_source(text)):
        return "harmony"
    if not isinstance(text, str) or not text.strip():  # none of its own: its family's, if known
        if arch.startswith("gemma"):
            return "gemma"  # (as llama-server's `--chat-template gemma`; Gemma 3 270M has none)
        return "internlm" if arch.startswith("internlm") else "completion"
    if "<|im_start|>" in text:
        if "<function=" in text and "<parameter=" in text:
            return "qwen3-coder"  # Qwen3-Coder's XML calls
        if arch.startswith("qwen"):
            return "qwen"
        named = f"{metadata.get('general.name', '')} {metadata.get('general.basename', '')}"
        return "smollm2" if "smollm2" in named.lower() else "chatml"
    if "<start_of_turn>" in text:
        return "gemma"
    if "<|Bot|>" in text:
        return "internlm-chat"
    if "<|start_header_id|>" in text:
        return "llama-3"
    return "gguf-jinja"  # the model's own template: its call format found or derived from it
