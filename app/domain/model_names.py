"""One readable name per model, said the same way in the picker, the answer footers, the status
bar and the debug pane ("SmolLM2 135M Instruct · Q4_1"), and who answered a reply ("☁ canned ·
gpt-4o-mini" for a remote endpoint).

Guarantees: pure functions of strings, no Qt and no file access; `named` joins a title and its
quantisation with " · "; `readable` turns any name the app ever stored for a reply — today's
readable one, a remote answerer's, or the technical description older versions kept
("SmolLM2-135M-Instruct.Q4_1.gguf (llama, template smollm2)", or a bare file name) — into the
readable form, so replies saved before this module read the same as new ones; `same_model`
compares two names by their readable forms (an unknown name, "", is the same as none);
`answered_by` is the name a reply carries for the endpoint and model that wrote it. The
quantisation is read from a file name as llama.cpp's tools and the hub's uploaders spell it
(`quant_of_name`, `strip_quant`), one definition the model library uses too.
"""

from __future__ import annotations

import re
from pathlib import PurePath

# Quantisation labels as llama.cpp's tools and the hub's uploaders spell them in file names.
_QUANT = re.compile(
    r"(?:^|[-._ ])(?P<q>(?:I?Q[1-8]_(?:K_)?(?:XXS|XS|S|M|L|XL|NL|[0-9])|I?Q[1-8]_K|TQ[12]_0"
    r"|MXFP4(?:_MOE)?|BF16|F16|F32|FP16|FP32|FP8|Q8_0|Q4_0_4_[48]|Q4_0_8_8))(?=$|[-._ ])",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"-\d{5}-of-\d{5}$", re.IGNORECASE)
# what older versions stored: "file.gguf (architecture, template name)"
_DESCRIBED = re.compile(r"^(?P<file>.+?\.gguf) \([^()]*template [^()]*\)$", re.IGNORECASE)
SEPARATOR = " · "
REMOTE = "☁"


def quant_of_name(name: str) -> str:
    """The quantisation a file name carries (`Qwen3-8B-Q4_K_M.gguf` → `Q4_K_M`), or ""."""
    stem = re.sub(r"\.gguf$", "", PurePath(name).name, flags=re.IGNORECASE)
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


def named(title: str, quant: str = "") -> str:
    """ "SmolLM2 135M Instruct · Q4_1" (the title alone without a quantisation)."""
    return f"{title}{SEPARATOR}{quant}" if quant else title


def of_file(path: str) -> str:
    """A model file's readable name when nothing better is known: its name without the
    quantisation, then the quantisation (`SmolLM2-135M-Instruct · Q4_1`)."""
    name = PurePath(path).name
    return named(strip_quant(name), quant_of_name(name))


def readable(name: str) -> str:
    """`name` in its readable form (see the module guarantees); "" stays ""."""
    name = name.strip()
    described = _DESCRIBED.match(name)
    if described is not None:
        return of_file(described["file"])
    if name.lower().endswith(".gguf") and "/" not in name and "\\" not in name:
        return of_file(name)
    return name


def same_model(a: str, b: str) -> bool:
    """Whether two names name one model (an unknown name, "", matches nothing)."""
    return bool(a and b) and readable(a) == readable(b)


def answered_by(endpoint: str | None, model: str, local: str) -> str:
    """The name a reply carries: "☁ canned · gpt-4o-mini" when `endpoint` (a remote endpoint's
    name) answered with `model` ("" unknown), else `local`, the model on this computer."""
    if endpoint is None:
        return local
    return named(f"{REMOTE} {endpoint}", model)


def is_remote(name: str) -> bool:
    """Whether a reply's name is a remote endpoint's (`answered_by`)."""
    return name.startswith(f"{REMOTE} ")


__all__ = [
    "SEPARATOR",
    "answered_by",
    "is_remote",
    "named",
    "of_file",
    "quant_of_name",
    "readable",
    "same_model",
    "strip_quant",
]
