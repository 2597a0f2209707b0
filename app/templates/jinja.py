"""The `gguf-jinja` template: the chat template stored in the GGUF, rendered in a sandbox.

Guarantees: the template runs in Jinja's immutable sandbox (no attribute tricks, no file or
network access); message text is tokenized without special-token parsing even though the
template writes one string: each message's content is rendered as a sentinel, the string is
split at the sentinels, and only the template's own text is tokenized with special parsing.
A template that rewrites message text (so the sentinels do not survive) is refused with a
clear error when a message spells a control token, or when the rendered prompt holds control
tokens that a rendering of neutral text does not (the check runs on the output, so a template
cannot build a control token out of harmless-looking text), rather than risk an injection.
A render is bounded: past `RENDER_SECONDS` of template code or `RENDER_CHARS` of output it
is stopped and refused with a sentence that says to pick a registry template instead.
"""

from __future__ import annotations

import re
import sys
import time
from datetime import datetime
from types import FrameType
from typing import Any, NoReturn

from app.domain.messages import Conversation, ReasoningEffort, Role
from app.errors import HarmonyDeskError
from app.templates.base import OutputParser, Template, TemplateDefaults, Tokenizer
from app.templates.text_output import TextOutputParser

_SENTINEL = re.compile("\ue000(\\d+)\ue001")


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


class GgufJinja(Template):
    name = "gguf-jinja"
    defaults = TemplateDefaults()

    def __init__(self, source: str = "", bos: str = "", eos: str = "") -> None:
        self.source, self.bos, self.eos = source, bos, eos

    def for_model(self, metadata: dict[str, Any]) -> Template:
        source = metadata.get("tokenizer.chat_template")
        if not isinstance(source, str) or not source.strip():
            raise JinjaTemplateError("this model stores no chat template; choose another template")
        return GgufJinja(
            source, str(metadata.get("x.bos_text", "")), str(metadata.get("x.eos_text", ""))
        )

    def _render(self, messages: list[dict[str, str]]) -> str:
        from jinja2 import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals.update(
            raise_exception=_raise, strftime_now=lambda f: datetime.now().strftime(f)
        )
        try:
            return _render_bounded(
                env.from_string(self.source),
                messages=messages,
                add_generation_prompt=True,
                bos_token=self.bos,
                eos_token=self.eos,
            )
        except _Overrun as exc:
            raise JinjaTemplateError(
                f"the model's chat template {exc} and was stopped; choose a built-in template"
                " for this model (Model settings)"
            ) from exc
        except (TemplateError, RecursionError, MemoryError, OverflowError) as exc:
            raise JinjaTemplateError(f"the model's chat template failed: {exc}") from exc

    def prompt_ids(
        self,
        conversation: Conversation,
        tokenizer: Tokenizer,
        *,
        reasoning_effort: ReasoningEffort | None = None,
    ) -> list[int]:
        turns = [
            (m.author.role.value, m.text)
            for m in conversation.messages
            if m.author.role is not Role.TOOL
        ]
        marked = self._render(
            [{"role": r, "content": f"\ue000{i}\ue001"} for i, (r, _) in enumerate(turns)]
        )
        found = [int(i) for i in _SENTINEL.findall(marked)]
        if sorted(found) == list(range(len(turns))):
            out: list[int] = []
            for i, part in enumerate(_SENTINEL.split(marked)):
                if i % 2:
                    out += tokenizer.tokenize(turns[int(part)][1], special=False)
                elif part:
                    out += tokenizer.tokenize(part, special=True)
            return out
        for _, text in turns:
            if tokenizer.tokenize(text, special=True) != tokenizer.tokenize(text, special=False):
                raise JinjaTemplateError(
                    "the model's chat template rewrites message text, and a message spells a"
                    " control token; choose a built-in template for this model"
                )
        ids = tokenizer.tokenize(
            self._render([{"role": r, "content": t} for r, t in turns]), special=True
        )
        neutral = tokenizer.tokenize(
            self._render([{"role": r, "content": "x"} for r, _ in turns]), special=True
        )
        control = {i for i, piece in enumerate(tokenizer.token_table()) if piece == b""}
        if sorted(i for i in ids if i in control) != sorted(i for i in neutral if i in control):
            raise JinjaTemplateError(
                "the model's chat template turns message text into control tokens; choose a"
                " built-in template for this model"
            )
        return ids

    def stop_ids(self, tokenizer: Tokenizer) -> list[int]:
        return [tokenizer.eos_id] if tokenizer.eos_id >= 0 else []

    def output_parser(self, tokenizer: Tokenizer) -> OutputParser:
        return TextOutputParser(tokenizer.token_table(), self.stop_ids(tokenizer))
