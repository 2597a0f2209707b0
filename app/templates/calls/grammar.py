"""The grammar of a turn with tools on a plain-text model: free text until a call's trigger
(a lazy grammar), then the call held to the declared tools.

Guarantees: `auto` leaves the text free and constrains every call from its trigger on (its
name one of the tools, its arguments their schema: a schema the token mask cannot take allows
any object, which the tool checks itself); `required` forces a call from the first token
(after a `<think>` block for a family that thinks), and one or more calls end the answer; a
function's name forces a call to it; `none` allows no call at all (the trigger cannot be
written). A family that thinks may open with a think block, capped at `thinking_budget` tokens
when one is given. A marker that is one control token in the model's vocabulary (`control`) is
written as that token, never spelled out in plain characters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from app.constrain.constraint import Constraint, ToolChoice
from app.constrain.guidance import compiled
from app.errors import SchemaError
from app.templates.calls.format import CallFormat


def _think(budget: int | None) -> list[str]:
    """A think block, capped at `budget` tokens when given; its tags are literals of their
    own, so a vocabulary's think tokens are written as tokens."""
    cap = f"[max_tokens={budget}]" if budget else ""
    return [
        'think: "<think>" thought "</think>" THINK_GAP',
        f"thought{cap}: THINK_TEXT",
        "THINK_TEXT: /(.|\\n)*/ & ~/(.|\\n)*<\\/think>(.|\\n)*/",
        "THINK_GAP: /\\s{0,4}/",  # a model may not loop in blank space before its call
    ]


_TEXT = "(.|\\n)*"


def _tokens_for(lark: str, control: Mapping[str, int]) -> str:
    """`lark` with each control marker's literal written as its token."""
    for marker, token in control.items():
        lark = lark.replace(json.dumps(marker), f"<[{token}]>")
    return lark


def call_grammar(
    fmt: CallFormat,
    tools: Mapping[str, Mapping[str, Any] | None],
    tool_choice: ToolChoice,
    *,
    thinks: bool = False,
    control: Mapping[str, int] | None = None,
    thinking_budget: int | None = None,
) -> Constraint | None:
    """The constraint for a turn offering `tools` under `tool_choice` (see the guarantees);
    None when no tool is offered."""
    if not tools:
        return None
    control = control or {}
    trigger = fmt.triggers[0]
    if tool_choice == "none":
        if trigger in control:  # a control token: plain text cannot spell it
            return None
        banned = f"/{_TEXT}/ & ~/{_TEXT}{_escape(trigger)}{_TEXT}/"
        return Constraint(_compile(f"start: TEXT\nTEXT: {banned}"), "text, no tool call")
    if tool_choice not in ("auto", "required"):  # a name the request checked (`GenerationRequest`)
        tools = {tool_choice: tools[tool_choice]}
    rest = fmt.grammar_rest(tools)
    trig = json.dumps(trigger)
    if tool_choice == "auto":
        if trigger in control:  # free text cannot hold a token: a think block is a rule here
            lead = "think? " if thinks and "<think>" in control else ""
            head = [f"start: {lead}(tagged)* TAIL", f"tagged: TAIL {trig} call_rest"]
            head += _think(thinking_budget) if lead else []
        else:
            head = ["start: (tagged)* TAIL", "tagged: trig call_rest", f"trig[lazy]: TAIL {trig}"]
        lark = "\n".join(["%llguidance {}", *head, f"TAIL: /{_TEXT}/", rest])
        description = f"free text; a call to {', '.join(tools)} once it begins"
    else:
        sep = json.dumps(fmt.separator) + " " if fmt.separator else ""
        first = "think? " if thinks else ""
        lark = "\n".join(
            [f"start: {first}{trig} call_rest ({sep}{trig} call_rest)*", rest]
            + (_think(thinking_budget) if thinks else [])
        )
        description = f"a call to {', '.join(tools)}"
    return Constraint(_compile(_tokens_for(lark, control)), description)


def _compile(lark: str) -> str:
    """The grammar; `SchemaError` for what the engine cannot take (a token reference is
    checked by the worker, which has the vocabulary)."""
    grammar, problems = compiled(lark)
    problems = [p for p in problems if "can't validate <[" not in p]
    if problems:
        raise SchemaError(f"the tools' grammar cannot be enforced: {'; '.join(problems)}")
    return grammar


def _escape(text: str) -> str:
    """`text` as a literal inside a Lark regular expression."""
    return "".join(f"\\{c}" if c in ".^$*+?()[]{}|\\/" else c for c in text)
