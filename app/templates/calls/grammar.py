"""The grammar of a turn with tools on a plain-text model: free text until a call's trigger
(a lazy grammar), then the call held to the declared tools.

Guarantees: `auto` leaves the text free and constrains every call from its trigger on (its
name one of the tools, its arguments their schema: a schema the token mask cannot take allows
any object, which the tool checks itself); `required` forces a call from the first token
(after a reasoning block for a family that reasons), and one or more calls end the answer; a
function's name forces a call to it; `none` allows no call at all (the trigger cannot be
written). A format whose first trigger is `leading` (Llama 3's bare `{"name"`) is held as its
reader reads it: under `auto` such a call is constrained only where the answer begins or right
after a call (free text never begins with one, and holds one anywhere else as text), a call
behind its other trigger (`<|python_tag|>`) wherever it starts. A marker that is one control
token in the model's vocabulary (`control`) is written as that token, never spelled out in
plain characters; so is each control token within the trigger (Kimi-K3's
`<|close|>response<|sep|><|open|>tools<|sep|>`), as within the rest of a learned call's markup.

Reasoning (`ThinkBlock`) is the template's own markup, as its parser reads it (a derived
`<|START_THINKING|>`…`<|END_THINKING|>` as well as `<think>`): a turn may open with a block
(under `required` and a named tool always; under `auto` and `none` as a rule of its own where
its markup holds a control token, which free text cannot write); where the generation prompt
opens the block, every turn begins inside it and closes it before anything else, so a forced
call is "reasoning, the close, the call". The reasoning is capped at `thinking_budget` tokens
when one is given, cannot hold the close, and a control token within the markup (Kimi-K3's
`<|open|>think<|sep|>`) is written as that token.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.constrain.constraint import Constraint, ToolChoice
from app.constrain.guidance import compiled
from app.errors import SchemaError
from app.templates.calls.format import CallFormat

_TEXT = "(.|\\n)*"


@dataclass(frozen=True)
class ThinkBlock:
    """The reasoning block a turn may begin with, as the template's parser reads it: `tags`
    (its open and close markup) and `opened` (the generation prompt writes the open, so the
    turn begins inside the block and closes it first)."""

    tags: tuple[str, str] = ("<think>", "</think>")
    opened: bool = False


def _think(budget: int | None, block: ThinkBlock, control: Mapping[str, int]) -> list[str]:
    """The `think` rule: the block (from its open, or inside it when the prompt opened it)
    up to its close, capped at `budget` tokens when given; its markup is written with its
    control tokens. A close that begins with a control token follows text that cannot hold
    it, so at the cap the close is still required; a close spelled in plain characters is the
    end of the text's own lexeme (a greedy text lexeme would run over a literal after it),
    which ends at its first close; at the cap llguidance ends the rule where it stands, so
    there the close is not enforced."""
    head = "" if block.opened else _spell(block.tags[0], control) + " "
    close, cap = block.tags[1], f"[max_tokens={budget}]" if budget else ""
    gap = "THINK_GAP: /\\s{0,4}/"  # a model may not loop in blank space before its call
    if not _spell(close, control).startswith("<["):
        upto = f"/{_TEXT}{_escape(close)}/ & ~/{_TEXT}{_escape(close)}(.|\\n)+/"
        return [
            f"think: {head}thought THINK_GAP",
            f"thought{cap}: THINK_UPTO",
            f"THINK_UPTO: {upto}",
            gap,
        ]
    return [
        f"think: {head}thought {_spell(close, control)} THINK_GAP",
        f"thought{cap}: THINK_TEXT",
        f"THINK_TEXT: /{_TEXT}/ & ~/{_TEXT}{_escape(close)}{_TEXT}/",
        gap,
    ]


def _spell(marker: str, control: Mapping[str, int]) -> str:
    """`marker` as grammar items: each control token within it as that token, the rest as
    literals."""
    inside = sorted((m for m in control if m and m in marker), key=len, reverse=True)
    if not inside:
        return json.dumps(marker)
    parts = re.split("(" + "|".join(re.escape(m) for m in inside) + ")", marker)
    return " ".join(f"<[{control[p]}]>" if p in control else json.dumps(p) for p in parts if p)


def _begins_with_token(marker: str, control: Mapping[str, int]) -> bool:
    """Whether `marker` begins with a control token (free text cannot write it)."""
    return _spell(marker, control).startswith("<[")


def _holds_token(block: ThinkBlock, control: Mapping[str, int]) -> bool:
    """Whether the block's markup holds a control token (free text cannot write it)."""
    return any(m and m in tag for m in control for tag in block.tags)


def _lead(block: ThinkBlock | None, forced: bool, control: Mapping[str, int]) -> str:
    """How a turn begins with the block: `think ` (the prompt opened it), `think? ` (it may),
    or "" (free text holds it, or there is none)."""
    if block is None:
        return ""
    if block.opened:
        return "think "
    return "think? " if forced or _holds_token(block, control) else ""


def _tokens_for(lark: str, control: Mapping[str, int]) -> str:
    """`lark` with each control marker's literal written as its token (a literal of its own,
    not the tail of a longer one that ends in an escaped quote and the marker)."""
    for marker, token in control.items():
        lark = re.sub(r"(?<!\\)" + re.escape(json.dumps(marker)), f"<[{token}]>", lark)
    return lark


def call_grammar(
    fmt: CallFormat,
    tools: Mapping[str, Mapping[str, Any] | None],
    tool_choice: ToolChoice,
    *,
    think: ThinkBlock | None = None,
    control: Mapping[str, int] | None = None,
    thinking_budget: int | None = None,
) -> Constraint | None:
    """The constraint for a turn offering `tools` under `tool_choice`, after the reasoning
    block `think` (None: the family does not reason; see the guarantees); None when no tool
    is offered."""
    if not tools:
        return None
    control = control or {}
    forced = tool_choice not in ("auto", "none")
    if tool_choice == "none":
        found = _no_call(fmt, tools, control)
        if found is None:
            return None
        lark, description = found
    else:
        if forced and tool_choice != "required":  # a name the request checked
            tools = {tool_choice: tools[tool_choice]}
        lark, description = _calls(fmt, tools, forced, control)
    lead = _lead(think, forced, control)
    if think is not None and lead:
        lark = re.sub("^start:", "after_think:", lark, count=1, flags=re.MULTILINE)
        rules = _think(thinking_budget, think, control)
        lark = "\n".join([lark, f"start: {lead}after_think", *rules])
    return Constraint(_compile(_tokens_for(lark, control)), description)


def _no_call(
    fmt: CallFormat, tools: Mapping[str, Mapping[str, Any] | None], control: Mapping[str, int]
) -> tuple[str, str] | None:
    """`none`: text that cannot write the trigger (None: it cannot anyway, a control token)."""
    trigger = fmt.triggers[0]
    token = _begins_with_token(trigger, control)
    if token and not fmt.opening:  # a control token: text cannot spell it
        return None
    banned = f"/{_TEXT}/ & ~/{_TEXT}{_escape(trigger)}{_TEXT}/"
    if token:
        banned = f"/{_TEXT}/"
    lark = f"start: TEXT\nTEXT: {banned}"
    if fmt.opening:  # the answer begins with its own header
        lark = "\n".join([lark.replace("TEXT", "answer_first TEXT", 1), fmt.grammar_rest(tools)])
    return lark, "text, no tool call"


def _calls(
    fmt: CallFormat,
    tools: Mapping[str, Mapping[str, Any] | None],
    forced: bool,
    control: Mapping[str, int],
) -> tuple[str, str]:
    """The grammar of calls to `tools`, `forced` from the first token or free text until a
    trigger (`auto`), and what it allows."""
    rest = fmt.grammar_rest(tools)
    trigger = fmt.triggers[0]
    trig = _spell(trigger, control)  # its control tokens as tokens (Kimi-K3's `<|close|>`)
    if forced:
        sep = json.dumps(fmt.separator) + " " if fmt.separator else ""
        opened = "call_first" if fmt.opening else f"{trig} call_rest"  # the prompt wrote it
        lark = "\n".join([f"start: {opened} ({sep}{trig} call_rest)*", rest])
        return lark, f"a call to {', '.join(tools)}"
    said = f"free text; a call to {', '.join(tools)} once it begins"
    if trigger in fmt.leading:
        return _leading_auto(fmt, rest, control), said
    # after an opening the answer begins with a call or with the answer's own header
    opened = "(call_first | answer_first) " if fmt.opening else ""
    if _begins_with_token(trigger, control):  # free text cannot hold it: the call follows
        head = [f"start: {opened}(tagged)* TAIL", f"tagged: TAIL {trig} call_rest"]
    else:
        head = [f"start: {opened}(tagged)* TAIL", "tagged: trig call_rest"]
        head.append(f"trig[lazy]: TAIL {trig}")
    return "\n".join(["%llguidance {}", *head, f"TAIL: /{_TEXT}/", rest]), said


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
