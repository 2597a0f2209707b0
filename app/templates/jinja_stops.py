"""Where a turn on a GGUF's own chat template ends: the stop ids of a generation on it.

Guarantees: the ids are the model's end-of-sequence id; the first control token the template
writes after an assistant's text, before the next turn's text (its end of turn: Gemma 4's
`<turn|>`, Nemotron Nano v2's `<SPECIAL_12>`, ChatML's `<|im_end|>`), as llama.cpp ends
generation at those tokens; and each of the call format's `ends` that is one token in the
model's vocabulary (Gemma 4 hands the turn over after its calls with `<|tool_response>`). A
control token the reasoning markup writes within a tag of several tokens is never taken for
the end of turn: every reasoning turn writes it before its end (Kimi-K3 closes its reasoning
with `<|close|>think<|sep|>…` and its turn with `<|close|>message<|sep|><|end_of_msg|>`). A
template that cannot render the probe turn adds no end of turn: the model stops at its
end-of-sequence id, as before. `opens_think` says whether the generation prompt leaves the
call format's think block open (Nemotron Nano v2 ends it with `<think>\n`), so that a forced
call's grammar closes that block first. Each probe is rendered once per template.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from app.templates.base import Tokenizer
from app.templates.calls.format import CallFormat
from app.templates.jinja_render import JinjaTemplateError, render

_PROBE, _NEXT = "\ue000", "\ue001"


@functools.lru_cache(maxsize=32)
def turn_end_text(source: str, bos: str = "", eos: str = "") -> str:
    """What the template writes between an assistant's text and the next user's ("" when it
    cannot say)."""
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": _PROBE},
        {"role": "user", "content": _NEXT},
    ]
    try:
        text = render(
            source,
            messages=messages,
            tools=None,
            add_generation_prompt=False,
            bos_token=bos,
            eos_token=eos,
        )
    except JinjaTemplateError:
        return ""
    start, end = text.find(_PROBE), text.find(_NEXT)
    return text[start + 1 : end] if 0 <= start < end else ""


def template_stop_ids(
    tokenizer: Tokenizer,
    source: str,
    bos: str,
    eos: str,
    fmt: CallFormat | None,
    think: Sequence[str] = (),
) -> list[int]:
    """The stop ids of a generation on `source` whose reasoning markup is `think` (its open
    and close tags; see the module guarantees)."""
    table = tokenizer.token_table()

    def control(i: int) -> bool:
        return 0 <= i < len(table) and table[i] == b""

    stops = {tokenizer.eos_id} if tokenizer.eos_id >= 0 else set()
    within = _within_tags(tokenizer, think, control)
    tail = turn_end_text(source, bos, eos)
    found = tokenizer.tokenize(tail, special=True) if tail else []
    ended = [i for i in found if control(i) and i not in within]
    stops |= set(ended[:1])
    for marker in fmt.ends if fmt is not None else ():
        found = tokenizer.tokenize(marker, special=True)
        if len(found) == 1 and control(found[0]):
            stops.add(found[0])
    return sorted(stops)


def _within_tags(
    tokenizer: Tokenizer, tags: Sequence[str], control: Callable[[int], bool]
) -> set[int]:
    """The control tokens within those of `tags` that are several tokens long."""
    out: set[int] = set()
    for tag in tags:
        ids = tokenizer.tokenize(tag, special=True) if tag else []
        out |= {i for i in ids if control(i)} if len(ids) > 1 else set()
    return out


@functools.lru_cache(maxsize=32)
def opens_think(source: str, tag: str, bos: str = "", eos: str = "") -> bool:
    """Whether the generation prompt after a user's message ends inside an open `tag`."""
    try:
        text = render(
            source,
            messages=[{"role": "user", "content": "Hi"}],
            tools=None,
            add_generation_prompt=True,
            bos_token=bos,
            eos_token=eos,
        )
    except JinjaTemplateError:
        return False
    return text.rstrip().endswith(tag)
