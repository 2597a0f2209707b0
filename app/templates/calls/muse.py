"""Muse Glimmer's tool calls, as `muse-glimmer.jinja` writes them: an assistant turn is one or
more messages, each `<|start|>assistant to=RECIPIENT<|message|>…` ended by `<|eom|>` (more
follow) or `<|eot|>` (the end of the turn); thinking goes to `self`, the answer to `user`, and a
call to the tool by name, its message an ATEM block:

    <|start|>assistant to=get_weather<|message|><atem:function_calls>
    <atem:invoke name="get_weather">
    <atem:parameter name="city">Paris</atem:parameter>
    <atem:parameter name="days">3</atem:parameter>
    </atem:invoke>
    </atem:function_calls><|eom|>

A string value is written as it is, any other value as JSON. The generation prompt ends with
`<|start|>assistant` (`opening`), so a model's answer begins at ` to=`. Thinking is the message
to `self` (`think`: from ` to=self<|message|>` to its `<|eom|>`). Tools are declared in the
system turn as JSON schemas with the template's wording; a result comes back in a `tool` turn
inside `<tool_output name="NAME">`.

The reader reads a message header to `user` (or with no recipient) as the start of answer text,
`<|eom|>` and `<|eot|>` as the ends of messages (no text, no call), and a message to any other
recipient as a call: each `<atem:invoke>` of its block is one (the invoke's name, as llama.cpp
takes it, not the header's), and a value is JSON when it parses, else text. It also takes a
message whose body is a JSON object (the call's arguments), and a block whose close is missing
at the end of the answer; ATEM markup in answer text, with no header before it, stays text. A
call message that is neither, or an invoke with text outside its parameters, is an
`E-CALL-SCHEMA` notice. The grammar (`muse_grammar`) holds each call's name to a declared tool
and its parameters to the tool's schema.

Muse is Harmony-like in shape (`<|start|>`, ` to=`, `<|message|>`) but not Harmony: its own end
markers, no channels, calls as XML rather than JSON, bare tool names, and another vocabulary; the
Harmony parser, which reads o200k_harmony token ids, cannot read it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from app.domain.messages import ToolDescription
from app.templates.calls.format import (
    CallFormat,
    CallSyntaxError,
    Piece,
    ToolCall,
    arguments_of,
    openai_tools,
)
from app.templates.calls.hermes import call_object, skip_space, tojson
from app.templates.calls.muse_grammar import (
    BLOCK,
    BLOCK_END,
    EOM,
    EOT,
    INVOKE,
    INVOKE_END,
    MESSAGE,
    PARAM,
    PARAM_END,
    START,
    TO,
    muse_call_rest,
)
from app.templates.calls.reading import Read, Remembering, Scan
from app.templates.calls.xml_calls import typed_value

ROLE = "assistant"
ANSWER_TO = ("", "user", "self")  # recipients whose message is text, not a call
_INVOKE = re.compile(r'<atem:invoke\s+name="([^"]*)">(.*?)</atem:invoke>', re.DOTALL)
_PARAM = re.compile(r'<atem:parameter\s+name="([^"]*)">(.*?)</atem:parameter>', re.DOTALL)
INTRO = (
    "In this environment you have access to a set of tools you can use to answer the user's"
    ' question.\n\nYou can invoke a function by writing a "<atem:function_calls>" block like the'
    ' following:\n<atem:function_calls>\n<atem:invoke name="$FUNCTION_NAME">\n'
    '<atem:parameter name="$PARAMETER_NAME">$PARAMETER_VALUE</atem:parameter>\n...\n'
    "</atem:invoke>\n</atem:function_calls>\n\nString and scalar parameters should be specified"
    " as is, while lists and objects should use JSON format. Note that spaces for string values"
    " are not stripped. The output is not expected to be valid XML and is parsed with regular"
    " expressions.\nHere are the functions available in JSONSchema format:\n// Function schemas"
)


def _value(value: Any) -> str:
    """A parameter's value as the template writes it: a string as it is, else JSON."""
    return value if isinstance(value, str) else tojson(value)


class Muse(Remembering, CallFormat):
    name = "muse"
    triggers = (START, EOM, EOT)
    opening = START + ROLE
    closers = ">}"
    separator = EOM
    think = (TO + "self" + MESSAGE, EOM)

    def declare(self, tools: Sequence[ToolDescription]) -> str:
        lines = []
        for t in openai_tools(tools):
            fn = t["function"]
            lines.append(
                f'\n{{"name": {tojson(fn["name"])}, "description": {tojson(fn["description"])},'
                f' "parameters": {tojson(fn["parameters"])}}}'
            )
        return INTRO + "".join(lines)

    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        out: list[Piece] = []
        for i, call in enumerate(calls):
            head = (EOM if i else "") + START + ROLE + TO
            out += [Piece(head, True), Piece(call.name), Piece(MESSAGE + BLOCK + "\n", True)]
            out += [Piece(INVOKE + ' name="', True), Piece(call.name), Piece('">\n', True)]
            args = arguments_of(call)
            for key, value in args.items() if isinstance(args, dict) else ():
                out += [Piece(PARAM + ' name="', True), Piece(key), Piece('">', True)]
                out += [Piece(_value(value)), Piece(PARAM_END + "\n", True)]
            out.append(Piece(INVOKE_END + "\n" + BLOCK_END, True))
        return out

    def result(self, name: str, text: str) -> list[Piece]:
        head = [Piece('<tool_output name="', True), Piece(name), Piece('">\n', True)]
        return [*head, Piece(text), Piece("\n</tool_output>", True)]

    def markers(self) -> tuple[str, ...]:
        return (START, MESSAGE, EOM, EOT, BLOCK, BLOCK_END, INVOKE, INVOKE_END, PARAM, PARAM_END)

    def read_with(self, text: str, final: bool, scan: Scan) -> Read:
        for end in (EOM, EOT):
            if text.startswith(end):
                return [], len(end)  # the end of a message
        at = len(START)
        if not text.startswith(ROLE, at):
            if not final and ROLE.startswith(text[at:]):
                return None
            cut = _end_of(text, at)
            if cut is None and not final:
                return None
            raise CallSyntaxError(f"no assistant message follows {START}", "", cut)
        return _message(text, at + len(ROLE), final, scan)

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        return muse_call_rest(tools)


def _message(text: str, at: int, final: bool, scan: Scan) -> Read:
    """The assistant message whose header goes on at `at` (past `<|start|>assistant`)."""
    rest = text[at:]
    if rest.startswith(MESSAGE):
        return [], at + len(MESSAGE)  # no recipient: the answer
    if not rest.startswith(TO):
        if not final and (TO.startswith(rest) or MESSAGE.startswith(rest)):
            return None
        return [], at  # no header follows (another message starts, or plain text)
    close = scan.find(text, MESSAGE, at)
    if close < 0:
        if not final and _may_close(rest[len(TO) :]):
            return None
        raise CallSyntaxError(f"the message header never reaches {MESSAGE}", "", _end_of(text, at))
    recipient = text[at + len(TO) : close].strip()
    body = close + len(MESSAGE)
    if recipient in ANSWER_TO:
        return [], body
    return _call(text, body, recipient, final, scan)


def _call(text: str, at: int, recipient: str, final: bool, scan: Scan) -> Read:
    """A message to `recipient`, a tool: its ATEM block (or a JSON object) from `at`."""
    at = skip_space(text, at)
    rest = text[at:]
    if rest.startswith("{"):
        end = scan.json_end(text, at)
        if end is None and not final:
            return None
        stop = len(text) if end is None else end
        try:
            args = call_object(tojson({"name": recipient, "arguments": text[at:stop]}))
        except CallSyntaxError as exc:
            raise CallSyntaxError(exc.message, recipient, stop) from exc
        return [args], stop
    if not rest.startswith(BLOCK):
        if not final and BLOCK.startswith(rest):
            return None
        cut = _end_of(text, at)
        if cut is None and not final:
            return None
        raise CallSyntaxError(f"its message is no {BLOCK} block", recipient, cut)
    close = scan.find(text, BLOCK_END, at)
    if close < 0 and not final:
        scan.wait_for(text, BLOCK_END)
        return None
    inner = text[at + len(BLOCK) : len(text) if close < 0 else close]
    length = len(text) if close < 0 else close + len(BLOCK_END)
    try:
        return _invokes(inner, recipient), length
    except CallSyntaxError as exc:
        why = exc.message if close >= 0 else f"its block never reaches {BLOCK_END}"
        raise CallSyntaxError(why, exc.name, length) from exc


def _invokes(inner: str, recipient: str) -> list[ToolCall]:
    """The calls of one block's text (between its tags)."""
    calls = [
        ToolCall(name.strip(), _arguments(body, name.strip()))
        for name, body in _INVOKE.findall(inner)
    ]
    leftover = _INVOKE.sub("", inner).strip()
    if leftover or not calls:
        why = f"text outside any invoke: {leftover[:60]!r}" if leftover else "the block is empty"
        raise CallSyntaxError(why, calls[0].name if calls else recipient)
    return calls


def _arguments(body: str, name: str) -> str:
    """An invoke's parameters as JSON arguments (see the module guarantees)."""
    if not name:
        raise CallSyntaxError("the invoke has no name")
    args = {key.strip(): typed_value(value, None) for key, value in _PARAM.findall(body)}
    leftover = _PARAM.sub("", body).strip()
    if leftover:
        raise CallSyntaxError(f"text outside any parameter: {leftover[:60]!r}", name)
    return tojson(args)


def _may_close(recipient: str) -> bool:
    """Whether a header's recipient so far may still end at `<|message|>`."""
    cut = recipient.find("<")
    head = recipient if cut < 0 else recipient[:cut]
    return "\n" not in head and (cut < 0 or MESSAGE.startswith(recipient[cut:]))


def _end_of(text: str, at: int) -> int | None:
    """Where the message going on at `at` ends: at its end marker or the next message's start;
    None when neither has come yet."""
    found = [i for m in (EOM, EOT, START) if (i := text.find(m, at)) >= 0]
    return min(found) if found else None
