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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.errors import HarmonyDeskError

# Quantisation labels as llama.cpp's tools and the hub's uploaders spell them in file names.
_QUANT = re.compile(
    r"(?:^|[-._ ])(?P<q>(?:I?Q[1-8]_(?:K_)?(?:XXS|XS|S|M|L|XL|NL|[0-9])|I?Q[1-8]_K|TQ[12]_0"
    r"|MXFP4(?:_MOE)?|BF16|F16|F32|FP16|FP32|FP8|Q8_0|Q4_0_4_[48]|Q4_0_8_8))(?=$|[-._ ])",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"-\d{5}-of-\d{5}$", re.IGNORECASE)
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

    def badges(self) -> tuple[str, ...]:
        """`("tools", "reasoning")` — only what is known to be there."""
        return tuple(
            name
            for name, on in (
                ("tools", self.tools),
                ("reasoning", self.reasoning),
                ("vision", self.vision),
            )
            if on
        )


def quant_of_name(name: str) -> str:
    """The quantisation a file name carries (`Qwen3-8B-Q4_K_M.gguf` → `Q4_K_M`), or ""."""
    stem = re.sub(r"\.gguf$", "", Path(name).name, flags=re.IGNORECASE)
    stem = _SPLIT.sub("", stem)
    found = list(_QUANT.finditer(stem))
    return found[-1]["q"].upper() if found else ""


def strip_quant(stem: str) -> str:
    """A file stem without its split suffix and quantisation (`SmolLM2-135M-Instruct.Q4_1`
    → `SmolLM2-135M-Instruct`)."""
    stem = _SPLIT.sub("", re.sub(r"\.gguf$", "", stem, flags=re.IGNORECASE))
    found = list(_QUANT.finditer(stem))
    if found:
        m = found[-1]
        stem = (stem[: m.start()] + stem[m.end() :]).strip("-._ ")
    return stem or "model"


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
    from app.templates.registry import default_template_name, get_template

    title = friendly_name(metadata, path, known)
    name = default_template_name(metadata)
    try:
        template = get_template(name).for_model(metadata)
    except HarmonyDeskError:  # a template that cannot serve this model: no capability claimed
        return ModelCard(title, template=name, vision=_clip_keys(metadata))
    calls = template.tool_calls or ""
    return ModelCard(
        title=title,
        tools=bool(calls),
        reasoning=bool(template.takes_effort or template.thinks),
        vision=_clip_keys(metadata),
        call_format=calls,
        template=name,
    )


def _clip_keys(metadata: dict[str, Any]) -> bool:
    return metadata.get("general.architecture") != "clip" and any(
        k.startswith("clip.has_vision") for k in metadata
    )


__all__ = ["ModelCard", "card_of", "friendly_name", "quant_of_name", "strip_quant"]
