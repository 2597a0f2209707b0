"""Whether a model is a base (pretrained, completion) model rather than a chat model, from its
GGUF header and file name: the "base model" badge in the model chooser and the Models page,
and the warning before chatting with one.

Guarantees: a pure function of the header's metadata, the file name and the template the
registry picks (no Qt, no file access); it says why in a sentence, or "" for a chat model. A
model is a base model when (1) the template picked for it only continues text (its capability
is completion), or (2) its header carries no chat template of its own and nothing in its name,
base name, fine-tune or tags says it was tuned to follow instructions ("instruct", "it",
"chat", "sft", "dpo", …: Gemma 3 270M, whose header has none of these, is one), or (3) its
name says "base" and nothing says it was tuned. A chat template or a tuning word is trusted:
an instruction-tuned model is never called a base model for lack of one of the two alone. An
architecture released only as a chat model (`CHAT_ONLY`: gpt-oss, trained on its Harmony format
alone) is never a base model.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

TUNED_WORDS = frozenset(
    {"instruct", "instruction", "it", "chat", "sft", "dpo", "rlhf", "orpo", "kto", "assistant"}
    | {"hermes", "tulu", "zephyr", "vicuna", "alpaca", "coder", "thinking", "reasoning"}
)
BASE_WORDS = frozenset({"base", "pretrained", "pt"})
CHAT_ONLY = frozenset({"gpt-oss"})  # general.architecture values with no base release
_WORD = re.compile(r"[a-z0-9]+")
NO_TEMPLATE = (
    "its file has no chat template and its name says no instruction tuning, so it continues"
    " text rather than answering"
)
COMPLETION = "its template only continues text: it does not hold a chat"
NAMED_BASE = "its name says so: it continues text rather than answering"
BADGE = "base model"


def _words(metadata: dict[str, Any], path: str) -> set[str]:
    said: list[str] = [PurePath(path).name]
    for key in ("general.name", "general.basename", "general.finetune"):
        value = metadata.get(key)
        if isinstance(value, str):
            said.append(value)
    tags = metadata.get("general.tags")
    if isinstance(tags, list):
        said.extend(t for t in tags if isinstance(t, str))
    return {w for text in said for w in _WORD.findall(text.lower())}


def _tuned(metadata: dict[str, Any], words: set[str]) -> bool:
    finetune = metadata.get("general.finetune")
    if isinstance(finetune, str) and finetune.strip() and finetune.lower() not in BASE_WORDS:
        return True
    return bool(words & TUNED_WORDS)


def base_model(metadata: dict[str, Any], path: str, completion: bool) -> str:
    """Why the model is a base model (see the module guarantees), or "" for a chat model;
    `completion`: the template the registry picks for it only continues text."""
    if completion:
        return COMPLETION
    if metadata.get("general.architecture") in CHAT_ONLY:
        return ""
    words = _words(metadata, path)
    if _tuned(metadata, words):
        return ""
    template = metadata.get("tokenizer.chat_template")
    if not (isinstance(template, str) and template.strip()):
        return NO_TEMPLATE
    return NAMED_BASE if words & BASE_WORDS else ""


__all__ = ["BADGE", "base_model"]
