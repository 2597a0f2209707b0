"""Llama 3.1–3.3 JSON tool calling, as `meta-llama-Llama-3.1-8B-Instruct.jinja` writes it.

The prompt side writes what the official template writes: "Environment: ipython" in the system
turn (the template's business: `Llama3.declaration`), the tools as indented JSON leading the
first user message with the template's wording, a call as `{"name": …, "parameters": …}`, a
result in an `ipython` turn written as the template writes a string there (JSON-quoted: a
string is iterable in Jinja, so `content | tojson` applies). The template takes one call a
turn; several are written `; `-separated, as Llama models emit them.

The reader takes a call that starts with `{"name"` (also `{ "name"` and the
`{"type": "function", "name": …}` shape) only where llama.cpp's Llama 3.x parser does: at the
start of the answer (past blank space and any think block), or right after another call; such
JSON anywhere else is answer text (a model quoting a call in prose does not make one). A call
behind `<|python_tag|>`, which Llama writes before a JSON call or a built-in call
`NAME.call(key="value", …)`, is read wherever it starts, the text before it staying answer text.
Several calls separated by `;`; `"arguments"` for `"parameters"`. Text that is code after
`<|python_tag|>` is a call to `python` with that code. A call is only read whole: its JSON
object must close (or the answer end), so a call never ends early.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from app.domain.messages import ToolDescription
from app.templates.calls.format import CallFormat, CallSyntaxError, Piece, ToolCall, openai_tools
from app.templates.calls.hermes import call_object, json_call_rest, skip_space, tojson
from app.templates.calls.reading import Read, Remembering, Scan

PYTHON_TAG = "<|python_tag|>"
ENVIRONMENT = "Environment: ipython\n"
KNOWLEDGE = "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
INTRO = (
    "Given the following functions, please respond with a JSON for a function call "
    "with its proper arguments that best answers the given prompt.\n\n"
    'Respond in the format {"name": function name, "parameters": dictionary of argument name'
    " and its value}.Do not use variables.\n\n"
)
_NAME = re.compile(r'"name"\s*:\s*"([^"\\]*)"')


def _builtin_call(code: str) -> ToolCall:
    """`NAME.call(key=value, …)` as a call; else the text is code for `python`."""
    try:
        node = ast.parse(code.strip(), mode="eval").body
    except SyntaxError:
        node = None
    func = node.func if isinstance(node, ast.Call) else None
    if (
        isinstance(node, ast.Call)
        and isinstance(func, ast.Attribute)
        and func.attr == "call"
        and isinstance(func.value, ast.Name)
        and not node.args
    ):
        try:
            args = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
        except ValueError as exc:
            raise CallSyntaxError("its arguments are not literals", func.value.id) from exc
        return ToolCall(func.value.id, tojson(args))
    return ToolCall("python", tojson({"code": code.strip()}))


class Llama3(Remembering, CallFormat):
    name = "llama3"
    triggers = ('{"name"', PYTHON_TAG, '{ "name"', '{"type": "function"')
    leading = ('{"name"', '{ "name"', '{"type": "function"')  # only where the answer begins
    closers = "};"
    result_role = "ipython"
    separator = "; "

    def declare(self, tools: Sequence[ToolDescription]) -> str:
        return INTRO + "".join(
            json.dumps(t, ensure_ascii=False, indent=4) + "\n\n" for t in openai_tools(tools)
        )

    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        out: list[Piece] = []
        for i, call in enumerate(calls):
            out.append(Piece(("; " if i else "") + '{"name": "', True))
            out.append(Piece(call.name))
            out.append(Piece('", "parameters": ', True))
            out.append(Piece(call.arguments))
            out.append(Piece("}", True))
        return out

    def result(self, name: str, text: str) -> list[Piece]:
        return [Piece(tojson(text))]

    def markers(self) -> tuple[str, ...]:
        return (PYTHON_TAG,)

    def read_with(self, text: str, final: bool, scan: Scan) -> Read:
        at = skip_space(text, len(PYTHON_TAG)) if text.startswith(PYTHON_TAG) else 0
        if at == len(text):
            if not final:
                return None
            raise CallSyntaxError("the call is empty")
        if text[at] != "{":
            return ([_builtin_call(text[at:])], len(text)) if final else None
        return _chain(text, at, final, scan)

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        return json_call_rest(tools, ': "', '", "parameters": ', "}")


def _chain(text: str, at: int, final: bool, scan: Scan) -> Read:
    """JSON calls from `at` on, separated by `;` (see `Llama3.read`); a call already read is
    not read again (`scan` remembers it)."""
    calls: list[ToolCall] = []
    while True:
        end = scan.json_end(text, at)
        if end is None:
            if not final:
                return None
            if calls:  # the calls before it stand; the cut one is read on its own
                return calls, at
            raise CallSyntaxError("the call's JSON never closes", name_guess(text[at:]))
        try:
            calls.append(_call_at(text, at, end, scan))
        except CallSyntaxError as exc:
            if calls:
                return calls, at
            raise CallSyntaxError(exc.message, exc.name, end) from exc
        after = skip_space(text, end)
        if after == len(text) and not final:
            return None  # a `;` and another call may follow
        if after == len(text) or text[after] != ";":
            return calls, end
        at = skip_space(text, after + 1)
        if at == len(text):
            return (calls, at) if final else None
        if text[at] != "{":
            return calls, after + 1


def _call_at(text: str, at: int, end: int, scan: Scan) -> ToolCall:
    """The call whose JSON object is `text[at:end]` (read once per held call)."""
    call: ToolCall | None = scan.recall(at)
    if call is None:
        call = call_object(text[at:end])
        scan.remember(at, call)
    return call


def name_guess(raw: str) -> str:
    """The tool a call that is not (yet) valid JSON names, "" when it names none."""
    found = _NAME.search(raw)
    return found.group(1) if found else ""
