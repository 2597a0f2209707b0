"""The template registry: names to template classes, refusing silent overwrites.

The built-in templates are registered here, explicitly, by importing their classes (no import
side effects, no cycle: a template module never imports the registry). `register_template`
adds another class; a second registration of the same name raises with how to replace it on
purpose (`replace=True`); an unknown name raises with the valid names.
`default_template_name` picks a template from GGUF metadata.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from app.errors import HarmonyDeskError
from app.templates.base import Template
from app.templates.builtin import ChatML, Completion, Gemma, Llama3, Qwen, SmolLM2
from app.templates.harmony import HarmonyTemplate
from app.templates.jinja import GgufJinja

T = TypeVar("T", bound=type[Template])
BUILTINS: tuple[type[Template], ...] = (
    HarmonyTemplate, ChatML, SmolLM2, Qwen, Gemma, Llama3, Completion, GgufJinja
)  # fmt: skip
_REGISTRY: dict[str, type[Template]] = {cls.name: cls for cls in BUILTINS}


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
        return cls

    return add


def template_names() -> list[str]:
    return sorted(_REGISTRY)


def get_template(name: str) -> Template:
    """A new instance of the template called `name`."""
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
    if arch == "gpt-oss":
        return "harmony"
    if not isinstance(text, str) or not text.strip():
        return "completion"
    if "<|im_start|>" in text:
        if arch.startswith("qwen"):
            return "qwen"
        named = f"{metadata.get('general.name', '')} {metadata.get('general.basename', '')}"
        return "smollm2" if "smollm2" in named.lower() else "chatml"
    if "<start_of_turn>" in text:
        return "gemma"
    if "<|start_header_id|>" in text:
        return "llama-3"
    return "gguf-jinja"
