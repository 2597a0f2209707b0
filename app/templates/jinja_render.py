"""Renders a chat template's Jinja source the way Hugging Face does, in a bounded sandbox.

Guarantees: the template runs in Jinja's immutable sandbox (no attribute tricks, no file or
network access; the one mutation allowed is growing a list) with what Hugging Face gives a
chat template — `raise_exception`, `strftime_now`, loop controls, `{% generation %}` blocks
(ignored), and `tojson` as `json.dumps` (not ASCII-only, `, ` and `: ` separators unless
asked otherwise). A render is bounded: past `RENDER_SECONDS` of template code or
`RENDER_CHARS` of output it is stopped and refused with a sentence that says to pick a
registry template instead. Every failure is a
`JinjaTemplateError`; a compiled template is cached per source.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime
from functools import lru_cache
from types import FrameType
from typing import Any, NoReturn

from app.errors import HarmonyDeskError

RENDER_SECONDS = 2.0
RENDER_CHARS = 2_000_000
_TEMPLATE_FILE = "<template>"  # the file name Jinja gives code compiled from a string


class JinjaTemplateError(HarmonyDeskError):
    """The model's own chat template cannot be used."""


class _Overrun(Exception):
    """Raised inside the template's frames when a render passes a bound."""


def _bounded(deadline: float) -> Any:
    """A trace function that stops template code (only) once `deadline` has passed."""

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line" and time.monotonic() > deadline:
            raise _Overrun(f"ran longer than {RENDER_SECONDS:g} s")
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == _TEMPLATE_FILE else None

    return tracer


def _render_bounded(template: Any, **context: Any) -> str:
    """The rendered text, or `_Overrun` past the time or size bound."""
    previous = sys.gettrace()
    sys.settrace(_bounded(time.monotonic() + RENDER_SECONDS))
    try:
        out: list[str] = []
        size = 0
        for chunk in template.generate(**context):
            size += len(chunk)
            if size > RENDER_CHARS:
                raise _Overrun(f"wrote more than {RENDER_CHARS:,} characters")
            out.append(chunk)
        return "".join(out)
    finally:
        sys.settrace(previous)


def _raise(message: str) -> NoReturn:
    raise JinjaTemplateError(f"the model's chat template refused the conversation: {message}")


def tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """Hugging Face's `tojson` (not Jinja's HTML-safe one); a lazy sequence (`map`) as a list."""
    if not isinstance(value, str | bytes | dict | list | tuple) and hasattr(value, "__next__"):
        value = list(value)
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


@lru_cache(maxsize=32)
def _compiled(source: str) -> Any:
    from jinja2 import nodes
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class _Generation(Extension):
        """`{% generation %}…{% endgeneration %}` renders its body (Hugging Face's marker)."""

        tags = {"generation"}  # noqa: RUF012 - Jinja's own attribute

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.Scope(body, lineno=lineno)

    class _Sandbox(ImmutableSandboxedEnvironment):
        """Immutable, but a template may grow a list it made (`ids.append(…)`)."""

        def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
            if isinstance(obj, list) and attr in ("append", "extend"):
                return True
            return bool(super().is_safe_attribute(obj, attr, value))

    env = _Sandbox(trim_blocks=True, lstrip_blocks=True, extensions=[_Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals.update(raise_exception=_raise, strftime_now=lambda f: datetime.now().strftime(f))
    return env.from_string(source)


def render(source: str, **context: Any) -> str:
    """`source` rendered with `context` (see the module guarantees)."""
    from jinja2 import TemplateError

    try:
        return _render_bounded(_compiled(source), **context)
    except _Overrun as exc:
        raise JinjaTemplateError(
            f"the model's chat template {exc} and was stopped; choose a built-in template"
            " for this model (Model settings)"
        ) from exc
    except JinjaTemplateError:
        raise
    except (
        TemplateError,
        RecursionError,
        MemoryError,
        OverflowError,
        TypeError,
        ValueError,
        KeyError,
        IndexError,
        AttributeError,
    ) as exc:
        raise JinjaTemplateError(f"the model's chat template failed: {exc}") from exc


__all__ = ["RENDER_CHARS", "RENDER_SECONDS", "JinjaTemplateError", "render", "tojson"]
