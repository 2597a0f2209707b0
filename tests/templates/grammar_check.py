"""Checking a call format's grammar: does llguidance, under the grammar, take a whole text (or
whole token ids), with o200k_harmony as the tokenizer?

Guarantees: `accepts` is true only when every token is consumed, the matcher met no error and
the grammar may end there; text is tokenized with the special tokens (`<|start|>` is one
token); the llguidance tokenizer is built once per process. `grammar_of` fails the test when the
format gives no grammar for the tools. `harmony_controls` maps exactly those of the format's
markers that are o200k_harmony special tokens to their ids, as a model whose vocabulary has
them writes them.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import llguidance
from llguidance.tiktoken import lltokenizer_from_encoding

from app.constrain.constraint import ToolChoice
from app.harmony import encoding as enc
from app.templates.calls.format import CallFormat
from app.templates.calls.grammar import call_grammar

# a weather tool's arguments, the properties each format's grammar tests start from
WEATHER = {
    "city": {"type": "string"},
    "days": {"type": "integer"},
    "unit": {"type": "string", "enum": ["c", "f"]},
}


def weather_schema(**more: Any) -> dict[str, Any]:
    """An object schema of the `WEATHER` properties then `more`."""
    return {"type": "object", "properties": {**WEATHER, **more}}


@functools.cache
def lltokenizer() -> Any:
    """o200k_harmony as llguidance's tokenizer (`<|return|>` its end)."""
    return lltokenizer_from_encoding(
        enc.load_encoding()._tik, n_vocab=enc.N_VOCAB, eos_token=enc.RETURN
    )


def ids_of(text: str) -> list[int]:
    """`text` as o200k_harmony token ids, special tokens included."""
    return list(enc.load_encoding().encode_with_specials(text))


def accepts(grammar: str, text: str | Sequence[int]) -> bool:
    """Whether `grammar` takes all of `text` (or of the token ids) and may end there."""
    matcher = llguidance.LLMatcher(lltokenizer(), grammar, log_level=0)
    ids = ids_of(text) if isinstance(text, str) else list(text)
    return bool(matcher.consume_tokens(ids)) and not matcher.is_error() and matcher.is_accepting()


def grammar_of(
    fmt: CallFormat,
    tools: Mapping[str, Mapping[str, Any] | None],
    choice: ToolChoice,
    control: Mapping[str, int] | None = None,
) -> str:
    """The lazy grammar of `fmt` for `tools` under `choice` (the test fails on none)."""
    constraint = call_grammar(fmt, tools, choice, control=control)
    assert constraint is not None, f"{fmt.name} gave no grammar for {sorted(tools)}"
    return constraint.grammar


def harmony_controls(fmt: CallFormat) -> dict[str, int]:
    """The format's markers that are o200k_harmony special tokens, and their ids."""
    tik = enc.load_encoding()._tik
    return {m: tik.encode_single_token(m) for m in fmt.markers() if m in tik.special_tokens_set}
