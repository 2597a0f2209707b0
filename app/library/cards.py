"""What a person recognises a model by: a friendly name, the quantisation a file name carries,
and the capabilities its header promises (tools, reasoning, vision).

Guarantees: pure functions of a GGUF header, no Qt; the capabilities are the ones the window
itself goes by when the model is loaded — the template the registry picks for the header
(`default_template_name`, then `for_model`, as `ModelHost` does): **tools** when that template
has a tool-call format (`Template.tool_calls`), **reasoning** when it takes a reasoning effort
or thinks (`takes_effort`, `thinks`); **vision** here when its header has projector keys
(`clip.…`), and then, in the library's list, exactly when an image projector loads with it
(`scan.listing` pairs it). A template that cannot be set up for a model means neither badge,
never an error. The friendly name is the bundled model's own name, else the header's
`general.name` when it reads as a name, else the file name without its quantisation suffix.
A base (completion) model's card says why it is one (`base_models.py`), and its badges say
"base model".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.domain.model_names import quant_of_name, strip_quant
from app.errors import HarmonyDeskError
from app.library.base_models import BADGE, base_model

_NAME_OK = re.compile(r"[A-Za-z].*[A-Za-z0-9]|[A-Za-z]")
_GENERIC = {"model", "models", "tmp", "temp", "output", "gguf", "hf", "merged", "base"}


@dataclass(frozen=True)
class ModelCard:
    """A model as the picker shows it: its name and what it can do."""

    title: str
    tools: bool = False
    reasoning: bool = False
    vision: bool = False
    call_format: str = ""  # the tool-call format's name (`hermes`, `harmony`, …), "" for none
    template: str = ""
    base: str = ""  # why it is a base model, not a chat model ("": a chat model)

    def badges(self) -> tuple[str, ...]:
        """`("tools", "reasoning")` — only what is known to be there."""
        return tuple(
            name
            for name, on in (
                ("tools", self.tools),
                ("reasoning", self.reasoning),
                ("vision", self.vision),
                (BADGE, bool(self.base)),
            )
            if on
        )


def friendly_name(metadata: dict[str, Any], path: str | Path, known: str = "") -> str:
    """The name to show for a model: `known` (a bundled model's), the header's, or the file's."""
    if known:
        return known
    name = metadata.get("general.name")
    if isinstance(name, str):
        name = " ".join(name.split())[:80]
        if _NAME_OK.fullmatch(name) and name.lower() not in _GENERIC and "/" not in name:
            return name
    return strip_quant(Path(path).name)


def card_of(metadata: dict[str, Any], path: str | Path, known: str = "") -> ModelCard:
    """The card of the model whose header is `metadata` (file `path`)."""
    from app.templates.base import Capability
    from app.templates.registry import default_template_name, get_template

    title = friendly_name(metadata, path, known)
    name = default_template_name(metadata)
    try:
        template = get_template(name).for_model(metadata)
    except HarmonyDeskError:  # a template that cannot serve this model: no capability claimed
        return ModelCard(
            title,
            template=name,
            vision=_clip_keys(metadata),
            base=base_model(metadata, str(path), False),
        )
    calls = template.tool_calls or ""
    completion = template.defaults.capability is Capability.COMPLETION
    return ModelCard(
        title=title,
        tools=bool(calls),
        reasoning=bool(template.takes_effort or template.thinks),
        vision=_clip_keys(metadata),
        call_format=calls,
        template=name,
        base=base_model(metadata, str(path), completion),
    )


def _clip_keys(metadata: dict[str, Any]) -> bool:
    return metadata.get("general.architecture") != "clip" and any(
        k.startswith("clip.has_vision") for k in metadata
    )


__all__ = ["ModelCard", "card_of", "friendly_name", "quant_of_name", "strip_quant"]
