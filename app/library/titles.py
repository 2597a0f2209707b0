"""What the window calls a loaded model: its readable name (the one the picker, the answer
footers and the status bar show), its technical description (file, architecture, template:
tooltips and the debug pane) and, for a base model, why it is one.

Guarantees: pure functions of the loaded file's path and header, no Qt; the readable name is
the library's ("SmolLM2 135M Instruct · Q4_1": a bundled model's own title, else the header's
`general.name` when it reads as a name, else the file name without its quantisation; then the
quantisation the header's file type names, else the file name's), so the picker's list and
every label agree; a base model is decided by `base_models.base_model`, the rule the model
lists' badges follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.domain.model_names import named, quant_of_name
from app.gguf.info import GgufInfo
from app.library.base_models import base_model
from app.library.cards import friendly_name


@dataclass(frozen=True)
class Loaded:
    """A loaded model, as the window names it."""

    name: str  # "SmolLM2 135M Instruct · Q4_1"
    description: str  # "SmolLM2-135M-Instruct.Q4_1.gguf (llama, template smollm2)"
    base: str = ""  # why it is a base model ("": a chat model)


def _bundled_title(path: str) -> str:
    from app.library.bundled import bundled_models

    try:
        target = Path(path).resolve()
        return next((b.title for b in bundled_models() if b.path.resolve() == target), "")
    except OSError:
        return ""


def _quant(path: str, metadata: dict[str, Any]) -> str:
    """The quantisation the header's file type names (llama.cpp gives its metadata as text:
    "3"), else the file name's; never a guess from tensors this header does not carry."""
    raw = str(metadata.get("general.file_type", "")).strip()
    if raw.isdigit():
        told = GgufInfo(Path(path), 0, 0, {"general.file_type": int(raw)}, ()).quantization
        if told != GgufInfo(Path(path), 0, 0, {}, ()).quantization:  # a type it names
            return told
    return quant_of_name(Path(path).name)


def loaded(
    path: str, metadata: dict[str, Any], architecture: str, template: str, completion: bool
) -> Loaded:
    """The names of the model loaded from `path` with the template called `template`
    (`completion`: that template only continues text)."""
    title = friendly_name(metadata, path, _bundled_title(path))
    return Loaded(
        name=named(title, _quant(path, metadata)),
        description=f"{Path(path).name} ({architecture}, template {template})",
        base=base_model(metadata, path, completion) if metadata or completion else "",
    )


__all__ = ["Loaded", "loaded"]
