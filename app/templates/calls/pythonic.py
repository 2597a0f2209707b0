"""Pythonic tool calls: `[name(key='value', n=3, flag=True, xs=[1, 2])]` between markers.

LFM2 and LFM2.5 write a turn's calls as one Python list of calls between
`<|tool_call_start|>` and `<|tool_call_end|>`; another family that writes the same syntax
between other markers subclasses `Pythonic` with its own `name`, `open` and `close`.

Guarantees: the call list is read by Python's parser (`ast`) and never evaluated: only
literals are taken — strings (either quote, escapes decoded), numbers (finite), True/False/
None and their JSON spellings true/false/null, lists, tuples and dicts with string keys —
and anything else (a name, an expression, `**kwargs`, a positional argument) is a
`CallSyntaxError`, so markup can never run code. A string quoted with `'` whose text holds an
unescaped `'` (as LFM2's template writes it: it does not escape) is read when the quote that
ends it is the one followed by `,` `)` `]` `}` `:` or the end. A dotted name
(`Calendar.create_event`) is one name. Several calls in one list are several calls, and
several lists in a row too; a list whose closing marker is missing at the end of the answer
still counts; a malformed list is a `CallSyntaxError` that takes it whole (up to its closing
marker), naming the tool when it can be read. What the prompt side writes (`write`) is what
the template writes — strings single-quoted (escaped here), dicts as JSON, other values as
Python literals — and reads back to the same calls.
"""

from __future__ import annotations

import ast
import json
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from app.domain.messages import ToolDescription
from app.templates.calls.format import CallFormat, CallSyntaxError, Piece, ToolCall, openai_tools
from app.templates.calls.hermes import tojson
from app.templates.calls.pythonic_fast import fast_calls
from app.templates.calls.pythonic_grammar import python_string, pythonic_call_rest

_NAMES = {"true": True, "false": False, "null": None}
_NAME_GUESS = re.compile(r"\s*\[?\s*([A-Za-z_][\w.]*)\s*\(")
_CLOSES = ",)]}:"


def speaks_pythonic(source: str) -> bool:
    """Whether a chat template is LFM2's (its tools between `<|tool_list_start|>` and
    `<|tool_list_end|>`) or LFM2.5's (`List of tools: [`), as llama.cpp tells them: some of
    them never write an assistant's calls, so the probes cannot find the format."""
    lfm2 = "<|tool_list_start|>" in source and "<|tool_list_end|>" in source
    return lfm2 or "List of tools: [" in source


class _NotALiteral(ValueError):
    """A node of the call list that is not a literal."""


def python_literal(value: Any) -> str:
    """`value` (a JSON value) as the template writes an argument: a string single-quoted, a
    dict as JSON, anything else as a Python literal (a list's strings single-quoted too)."""
    if isinstance(value, str):
        return python_string(value)
    if isinstance(value, dict):
        return tojson(value)
    if isinstance(value, list):
        return "[" + ", ".join(python_literal(v) for v in value) + "]"
    if value is None or isinstance(value, bool):
        return repr(value)
    return json.dumps(value)


def literal_value(node: ast.expr) -> Any:
    """The JSON value of a literal node; `_NotALiteral` for anything else (never evaluated)."""
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None or isinstance(value, bool | str):
            return value
        if isinstance(value, int | float) and math.isfinite(value):
            return value
        raise _NotALiteral(f"{value!r} is not a JSON value")
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        number = literal_value(node.operand)
        if isinstance(number, int | float) and not isinstance(number, bool):
            return -number if isinstance(node.op, ast.USub) else number
    if isinstance(node, ast.List | ast.Tuple):
        return [literal_value(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return _dict_value(node)
    raise _NotALiteral(f"`{ast.unparse(node)[:60]}` is not a literal")


def _dict_value(node: ast.Dict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in zip(node.keys, node.values, strict=True):
        name = literal_value(key) if key is not None else None
        if not isinstance(name, str):
            raise _NotALiteral("a dict's keys must be strings")
        out[name] = literal_value(value)
    return out


def call_name(node: ast.expr) -> str:
    """The dotted name a call is made to (`Calendar.create_event`)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{call_name(node.value)}.{node.attr}"
    raise _NotALiteral("a call must be made to a name")


def _parsed(body: str) -> ast.expr:
    """The expression `body` holds (`SyntaxError` when it is none); its string escapes that
    Python does not know are kept as written, without a warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(body.strip(), mode="eval").body
        except (RecursionError, MemoryError, ValueError) as exc:  # nesting, NUL bytes
            raise SyntaxError(str(exc)) from exc


def requoted(body: str) -> str:
    """`body` with each `'` inside a single-quoted string that does not end it escaped: a
    quote ends the string only when what follows (past blanks) closes a value, or nothing."""
    out: list[str] = []
    quote = ""
    i = 0
    while i < len(body):
        c = body[i]
        if quote and c == "\\":
            out.append(body[i : i + 2])
            i += 2
            continue
        if c in "'\"" and (not quote or c == quote):
            rest = body[i + 1 :].lstrip()
            if quote == "'" and rest and rest[0] not in _CLOSES:
                c = "\\'"
            else:
                quote = "" if quote else c
        out.append(c)
        i += 1
    return "".join(out)


def read_calls(body: str) -> list[ToolCall]:
    """The calls a pythonic call list (`[f(a=1), g()]`, or a bare `f(a=1)`) holds."""
    text = body.strip()
    if not text:
        raise CallSyntaxError("the call is empty")
    fast = fast_calls(text)  # the common case, read as `ast` reads it
    if fast is not None:
        return fast
    name = guess_name(text)
    try:
        try:
            node = _parsed(text)
        except SyntaxError:
            node = _parsed(requoted(text))
        items = node.elts if isinstance(node, ast.List | ast.Tuple) else [node]
        return [_call(item) for item in items]
    except SyntaxError as exc:
        raise CallSyntaxError(f"the call is not Python call syntax ({exc.msg})", name) from exc
    except _NotALiteral as exc:
        raise CallSyntaxError(f"its arguments are not literals ({exc})", name) from exc


def _call(node: ast.expr) -> ToolCall:
    if not isinstance(node, ast.Call):
        raise _NotALiteral("each item of the list must be a call `name(key=value, …)`")
    name = call_name(node.func)
    if node.args:
        raise _NotALiteral(f"{name} takes its arguments by name (`key=value`)")
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise _NotALiteral("`**` arguments are not literals")
        arguments[keyword.arg] = literal_value(keyword.value)
    return ToolCall(name, tojson(arguments))


def guess_name(text: str) -> str:
    """The tool a call list that is not (yet) valid names first, "" when none."""
    found = _NAME_GUESS.match(text)
    return found.group(1) if found else ""


class Pythonic(CallFormat):
    """LFM2's markers around a pythonic call list (see the module guarantees)."""

    name = "pythonic"
    open: ClassVar[str] = "<|tool_call_start|>"
    close: ClassVar[str] = "<|tool_call_end|>"
    triggers = (open,)
    closers = close[-1]
    separator = ""  # each turn's calls are one list; lists in a row are read as they come
    tools_intro: ClassVar[str] = "List of tools: ["
    tools_outro: ClassVar[str] = "]"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.triggers = (cls.open,)
        cls.closers = cls.close[-1:]

    def declare(self, tools: Sequence[ToolDescription]) -> str:
        listed = ", ".join(tojson(t) for t in openai_tools(tools))
        return self.tools_intro + listed + self.tools_outro

    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        out = [Piece(self.open + "[", True)]
        for i, call in enumerate(calls):
            out += [Piece(", ", True)] if i else []
            out += [Piece(call.name), Piece("(", True), Piece(_arguments_text(call))]
            out.append(Piece(")", True))
        return [*out, Piece("]" + self.close, True)]

    def result(self, name: str, text: str) -> list[Piece]:
        return [Piece(text)]

    def markers(self) -> tuple[str, ...]:
        return (self.open, self.close)

    def read(self, text: str, final: bool) -> tuple[list[ToolCall], int] | None:
        start = len(self.open)
        end = text.find(self.close, start)
        if end < 0:
            if not final:
                return None
            return read_calls(text[start:]), len(text)
        length = end + len(self.close)
        try:
            return read_calls(text[start:end]), length
        except CallSyntaxError as exc:
            raise CallSyntaxError(exc.message, exc.name, length) from exc

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        return pythonic_call_rest(tools, self.close)


def _arguments_text(call: ToolCall) -> str:
    """`key=value, …` for the call's JSON arguments (a call whose arguments are no JSON
    object passes them as its one `arguments` string)."""
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        arguments = {"arguments": call.arguments}
    if not isinstance(arguments, dict):
        arguments = {"arguments": arguments}
    return ", ".join(f"{k}={python_literal(v)}" for k, v in arguments.items())


__all__ = [
    "Pythonic",
    "guess_name",
    "literal_value",
    "python_literal",
    "python_string",
    "read_calls",
    "requoted",
    "speaks_pythonic",
]
