"""The grammar of a turn with tools on a plain-text model: free text until a call's trigger
(a lazy grammar), then the call held to the declared tools.

Guarantees: `auto` leaves the text free and constrains every call from its trigger on (its
name one of the tools, its arguments their schema: a schema the token mask cannot take allows
any object, which the tool checks itself); `required` forces a call from the first token
(after a `<think>` block for a family that thinks), and one or more calls end the answer; a
function's name forces a call to it; `none` allows no call at all (the trigger cannot be
written). A format whose first trigger is `leading` (Llama 3's bare `{"name"`) is held as its
reader reads it: under `auto` such a call is constrained only where the answer begins or right
after a call (free text never begins with one, and holds one anywhere else as text), a call
behind its other trigger (`<|python_tag|>`) wherever it starts. A family that thinks may open
with a think block, capped at `thinking_budget` tokens when one is given. A marker that is one
control token in the model's vocabulary (`control`) is written as that token, never spelled out
in plain characters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from app.constrain.constraint import Constraint, ToolChoice
from app.constrain.guidance import compiled
from app.errors import SchemaError
from app.templates.calls.format import CallFormat


def _think(
    budget: int | None, tags: tuple[str, str] = ("<think>", "</think>"), opened: bool = False
) -> list[str]:
    """A think block, capped at `budget` tokens when given (`opened`: the prompt wrote its
    opening tag, the block goes on from there); its tags are literals of their own, so a
    vocabulary's think tokens are written as tokens."""
    cap = f"[max_tokens={budget}]" if budget else ""
    head = "" if opened else json.dumps(tags[0]) + " "
    return [
        f"think: {head}thought {json.dumps(tags[1])} THINK_GAP",
        f"thought{cap}: THINK_TEXT",
        f"THINK_TEXT: /(.|\\n)*/ & ~/(.|\\n)*{_escape(tags[1])}(.|\\n)*/",
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
    think_open: bool = False,
) -> Constraint | None:
    """The constraint for a turn offering `tools` under `tool_choice` (see the guarantees);
    None when no tool is offered."""
    if not tools:
        return None
    control = control or {}
    trigger = fmt.triggers[0]
    if tool_choice == "none":
        if trigger in control and not fmt.opening:  # a control token: text cannot spell it
            return None
        banned = f"/{_TEXT}/ & ~/{_TEXT}{_escape(trigger)}{_TEXT}/"
        if trigger in control:
            banned = f"/{_TEXT}/"
        lark = f"start: TEXT\nTEXT: {banned}"
        if fmt.opening:  # the answer begins with its own header
            lark = "\n".join(
                [lark.replace("TEXT", "answer_first TEXT", 1), fmt.grammar_rest(tools)]
            )
        return Constraint(_compile(_tokens_for(lark, control)), "text, no tool call")
    if tool_choice not in ("auto", "required"):  # a name the request checked (`GenerationRequest`)
        tools = {tool_choice: tools[tool_choice]}
    rest = fmt.grammar_rest(tools)
    trig = json.dumps(trigger)
    if tool_choice == "auto" and trigger in fmt.leading:
        lark = _leading_auto(fmt, rest, control)
        description = f"free text; a call to {', '.join(tools)} once it begins"
    elif tool_choice == "auto":
        # after an opening the answer begins with a call or with the answer's own header
        opened = "(call_first | answer_first) " if fmt.opening else ""
        if trigger in control:  # free text cannot hold a token: a think block is a rule here
            lead = "think? " if thinks and "<think>" in control else ""
            head = [f"start: {lead}{opened}(tagged)* TAIL", f"tagged: TAIL {trig} call_rest"]
            head += _think(thinking_budget) if lead else []
        else:
            head = [f"start: {opened}(tagged)* TAIL", "tagged: trig call_rest"]
            head.append(f"trig[lazy]: TAIL {trig}")
        lark = "\n".join(["%llguidance {}", *head, f"TAIL: /{_TEXT}/", rest])
        description = f"free text; a call to {', '.join(tools)} once it begins"
    else:
        sep = json.dumps(fmt.separator) + " " if fmt.separator else ""
        first = "think " if think_open else "think? " if thinks else ""  # open: close it
        opened = "call_first" if fmt.opening else f"{trig} call_rest"  # the prompt wrote it
        lark = "\n".join(
            [f"start: {first}{opened} ({sep}{trig} call_rest)*", rest]
            + (_think(thinking_budget, fmt.think, think_open) if first else [])
        )
        description = f"a call to {', '.join(tools)}"
    return Constraint(_compile(_tokens_for(lark, control)), description)


def _leading_auto(fmt: CallFormat, rest: str, control: Mapping[str, int]) -> str:
    """`auto` for a format whose first trigger begins a call only where the answer begins or
    right after a call (Llama 3's bare `{"name"`; anywhere else it is text), and which writes a
    call anywhere behind its first other trigger (`<|python_tag|>`), the same call after it.
    Free text there may not begin with a leading trigger (past blank space; after a call, past
    its separator too), so such a call is held to the tools; a lexeme takes the blank space
    with the trigger, as the lexer would otherwise end the blank space early."""
    raw_tag = next(t for t in fmt.triggers if t not in fmt.leading)
    tag = json.dumps(raw_tag)
    trig, sep = _escape(fmt.triggers[0]), _escape(fmt.separator.strip())
    leads = "|".join(_escape(t) for t in fmt.leading)
    lines = [
        "%llguidance {}",
        "start: LEAD call_rest seq | after_0",
        "seq: NEXT call_rest seq | after_1",  # right after a call, another may follow
        f"LEAD: /\\s*{trig}/",
        f"NEXT: /\\s*({sep}\\s*)?{trig}/",
        f"FREE_0: /{_TEXT}/ & ~/\\s*({leads}){_TEXT}/",
        f"FREE_1: /{_TEXT}/ & ~/\\s*({sep}\\s*)?({leads}){_TEXT}/",
    ]
    for i in (0, 1):
        if raw_tag in control:  # a token: free text cannot hold it
            lines.append(f"after_{i}: FREE_{i} | FREE_{i} {tag} TRIG call_rest seq")
        else:  # spelled out: the free text ends lazily at it
            lines.append(f"after_{i}: FREE_{i} | tag_{i} TRIG call_rest seq")
            lines.append(f"tag_{i}[lazy]: FREE_{i} {tag}")
    lines.append(f"TRIG: {json.dumps(fmt.triggers[0])}")
    return "\n".join([*lines, rest])


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
