"""Keeps a model's stored chat templates from running when llama-cpp-python loads it.

`llama_cpp.Llama.__init__` (0.3.x, `llama.py`) builds a `Jinja2ChatFormatter` — which compiles
the template with Jinja, constant folding included — for `tokenizer.chat_template` and every
`tokenizer.chat_template.*` in the model's metadata, whatever `chat_format` or `chat_handler`
it is given; a hostile template (`{{ 9 ** 999999999 }}`) then hangs the load. The worker never
uses llama-cpp-python's chat handlers (the app renders prompts itself, in its bounded template
helper), so `neutralise_chat_templates(llama_cpp)` replaces the formatter class that module
reads at load time with one that keeps the text and compiles nothing; a chat handler built
from it refuses to run. Guarantees: idempotent; after it, no `Llama(...)` in this process
compiles or runs a stored template.
"""

from __future__ import annotations

from typing import Any, NoReturn


class StoredTemplate:
    """Stands in for `Jinja2ChatFormatter`: holds the template, never compiles it."""

    def __init__(self, template: str, *args: Any, **kwargs: Any) -> None:
        self.template = template

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise RuntimeError("the worker does not format chats with a model's stored template")

    def to_chat_handler(self) -> Any:
        return self


def neutralise_chat_templates(llama_cpp: Any) -> None:
    """Make `llama_cpp.Llama(...)` leave stored chat templates uncompiled (see the module)."""
    llama_cpp.llama_chat_format.Jinja2ChatFormatter = StoredTemplate


__all__ = ["StoredTemplate", "neutralise_chat_templates"]
