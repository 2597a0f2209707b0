"""Rendering probe conversations through a chat template and reading what its assistant turn
adds (`turn_part`): the primitives `detect` learns and checks a template's call format with.

Guarantees: `turn_part` never cuts inside a `<…>` tag where the prompt and the turn part; the
probes' messages hold only the probes' own text (`call_messages`, `probe_tools`, `HEAD`);
`reads_back` is true only when a format reads exactly the given calls and no other text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from app.templates.calls.format import CallFormat, ToolCall
from app.templates.calls.hermes import tojson
from app.templates.calls.learn import IDS, NAME_A, NAME_B
from app.templates.calls.scanner import CallScanner
from app.templates.jinja_render import render
from app.templates.jinja_variables import extra_variables

PROSE = "probe_prose_text"
BESIDE = "probe_words_before_a_call"  # prose the assistant writes before its call
RESULT = "probe_tool_result_text"
Render = Callable[[list[dict[str, Any]], bool], str]  # (messages, add_generation_prompt)


@dataclass(frozen=True)
class TurnPart:
    """What an assistant turn adds to the prompt: `prefill` (the end of the generation prompt
    the turn rewrites, e.g. an opened `<think>`), `lead` (what the turn opens with before any
    text, e.g. an empty think block), `body`, then the end-of-turn marker (dropped)."""

    prefill: str
    lead: str
    body: str

    @property
    def generated(self) -> str:
        """The text a model writes for this turn after the generation prompt."""
        return self.prefill + self.lead + self.body


def call_messages(
    calls: Sequence[tuple[str, Any]], content: str = "", string_arguments: bool = False
) -> dict[str, Any]:
    """An assistant message making `calls` (name, arguments), OpenAI-shaped."""
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                "id": IDS[i] if i < len(IDS) else f"call_{i + 1:04d}",
                "type": "function",
                "function": {"name": name, "arguments": tojson(args) if string_arguments else args},
            }
            for i, (name, args) in enumerate(calls)
        ],
    }


def _inside_tag(text: str) -> bool:
    return text.rfind("<") > text.rfind(">")


def trailer(bare: str, full: str) -> str:
    """What a template writes after every conversation, whatever its last turn (Cohere's
    command-r ends each with its tool-use instructions): the end `bare` (a conversation) and
    `full` (it, then one more turn) share, where `full` does not just extend `bare`; "" for a
    template whose conversations only grow."""
    if full.startswith(bare):
        return ""
    k = 0
    while k < min(len(bare), len(full)) and bare[-1 - k] == full[-1 - k]:
        k += 1
    return bare[len(bare) - k :] if k and full.startswith(bare[: len(bare) - k]) else ""


def after(render: Render, head: list[dict[str, Any]], turn: dict[str, Any]) -> tuple[str, str]:
    """(prefill, the text after the shared prefix) of `head + [turn]` against its prompt (a
    `trailer` taken out of both, where the template writes one)."""
    prompt, full = render(head, True), render([*head, turn], False)
    bare = render(head, False)
    if tail := trailer(bare, full) if prompt.startswith(bare) else "":
        prompt = bare[: len(bare) - len(tail)] + prompt[len(bare) :]
        full = full[: len(full) - len(tail)]
    n = 0
    while n < min(len(prompt), len(full)) and prompt[n] == full[n]:
        n += 1
    while n and _inside_tag(full[:n]) and n < len(prompt):
        n -= 1
    return prompt[n:], full[n:]


def turn_part(render: Render, head: list[dict[str, Any]], turn: dict[str, Any]) -> TurnPart:
    """What `turn` (an assistant message) adds after the generation prompt of `head`."""
    _, plain = after(render, head, {"role": "assistant", "content": PROSE})
    at = plain.find(PROSE)
    lead, end = (plain[:at], plain[at + len(PROSE) :]) if at >= 0 else ("", "")
    prefill, text = after(render, head, turn)
    for tail in (end, end.rstrip()):
        if tail.strip() and text.endswith(tail):
            text = text[: len(text) - len(tail)]
            break
    for opening in (lead, lead.rstrip()):
        if opening.strip() and text.startswith(opening):
            return TurnPart(prefill, opening, text[len(opening) :])
    return TurnPart(prefill, "", text)


def probe_tools() -> list[dict[str, Any]]:
    """OpenAI-shaped declarations of the probes' tools."""
    described = {"type": "string", "description": "A probe argument."}  # (Cohere's writes it)
    props = {k: dict(described) for k in ("key_alpha", "key_beta", "key_gamma")}
    return [
        {
            "type": "function",
            "function": {
                "name": n,
                "description": "A probe.",
                "parameters": {"type": "object", "properties": props},
            },
        }
        for n in (NAME_A, NAME_B)
    ]


def renderer(source: str, bos: str, eos: str, tools: list[dict[str, Any]] | None) -> Render:
    """A `Render` of `source` with `tools` declared."""

    def run(messages: list[dict[str, Any]], add_generation_prompt: bool) -> str:
        return render(
            source,
            messages=messages,
            tools=tools,
            bos_token=bos,
            eos_token=eos,
            add_generation_prompt=add_generation_prompt,
            **extra_variables(tools),
        )

    return run


def reads_back(fmt: CallFormat, text: str, calls: Sequence[tuple[str, Any]]) -> bool:
    """Whether `fmt` reads exactly `calls` out of `text`, and nothing else."""
    if not fmt.triggers or not all(fmt.triggers):
        return False
    scanner = CallScanner(fmt)
    pieces = scanner.feed(text) + scanner.finish()
    if any(p.strip() if isinstance(p, str) else p.invalid for p in pieces):
        return False
    found: list[ToolCall] = [c for p in pieces if not isinstance(p, str) for c in p.calls]
    if len(found) != len(calls):
        return False
    return all(
        c.name == name and json.loads(c.arguments) == args
        for c, (name, args) in zip(found, calls, strict=True)
    )


HEAD = [{"role": "user", "content": "probe_question"}]

__all__ = [
    "BESIDE",
    "HEAD",
    "PROSE",
    "RESULT",
    "Render",
    "TurnPart",
    "after",
    "call_messages",
    "probe_tools",
    "reads_back",
    "renderer",
    "turn_part",
]
