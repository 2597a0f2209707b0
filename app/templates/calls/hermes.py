"""The Hermes tool-call format: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`.

Spoken by Qwen 2.5 / Qwen 3, Hermes 2 Pro / Hermes 3, and the default for ChatML models
without their own (SmolLM2 included). The prompt side writes what Qwen 3's official template
writes (tools as JSON lines inside `<tools>`, each call in its own block, results in a user
turn inside `<tool_response>`); the reader also takes what such models emit beside that:
`"parameters"` for `"arguments"`, arguments as a JSON string, a missing closing tag at the end
of the answer, and several calls in a row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from app.constrain.constraint import json_body
from app.domain.messages import ToolDescription
from app.templates.calls.format import (
    CallFormat,
    CallSyntaxError,
    Piece,
    ToolCall,
    openai_tools,
)

OPEN, CLOSE = "<tool_call>", "</tool_call>"
INTRO = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
OUTRO = (
    "\n</tools>\n\nFor each function call, return a json object with function name and"
    " arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


_ENCODER = json.JSONEncoder(ensure_ascii=False)  # built once: `json.dumps` builds one a call
_DECODER = json.JSONDecoder()


def tojson(value: Any) -> str:
    """JSON as chat templates write it (`tojson`: `, ` and `: ` separators, not ASCII-only)."""
    return _ENCODER.encode(value)


def call_object(raw: str) -> ToolCall:
    """A call from its JSON object text (`name` and `arguments`, or `parameters`)."""
    try:
        value = _DECODER.decode(raw)  # (`json.loads`, less its checks of the argument's type)
    except ValueError as exc:
        name = _name_guess(raw)
        raise CallSyntaxError(f"the call is not JSON ({exc})", name) from exc
    return call_value(value, raw)


def call_value(value: Any, raw: str | None = None) -> ToolCall:
    """A call from its JSON object, already read (`raw`: its text, where the tool is named
    when it is no call; its JSON when not given)."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise CallSyntaxError('the call has no "name"', _name_guess(raw or tojson(value)))
    name = value["name"]
    args = value.get("arguments", value.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError as exc:
            raise CallSyntaxError(f"its arguments are not JSON ({exc})", name) from exc
    if not isinstance(args, dict):
        raise CallSyntaxError("its arguments are not a JSON object", name)
    return ToolCall(name, tojson(args))


def _name_guess(raw: str) -> str:
    at = raw.find('"name"')
    if at < 0:
        return ""
    rest = raw[at + 6 :].lstrip(" :")
    return rest[1:].split('"', 1)[0] if rest.startswith('"') else ""


def tagged_calls(calls: Sequence[ToolCall], open_tag: str, close_tag: str) -> list[Piece]:
    """Each call as `open_tag` + `{"name": …, "arguments": …}` on its own line + `close_tag`,
    a newline between calls (the name and arguments are content)."""
    out: list[Piece] = []
    for i, call in enumerate(calls):
        out.append(Piece(("\n" if i else "") + open_tag + '\n{"name": "', True))
        out.append(Piece(call.name))
        out.append(Piece('", "arguments": ', True))
        out.append(Piece(call.arguments))
        out.append(Piece("}\n" + close_tag, True))
    return out


def json_call_rest(
    tools: Mapping[str, Mapping[str, Any] | None],
    before_name: str,
    after_name: str,
    after_arguments: str,
    close: str = "",
) -> str:
    """Lark for `call_rest` of a format that writes a call as `before_name NAME after_name
    ARGUMENTS after_arguments close`, the arguments held to each tool's schema (`close` may be
    a marker: it is a literal of its own)."""
    alternatives = []
    rules = []
    for i, (name, schema) in enumerate(tools.items()):
        alternatives.append(f"t_{i}")
        rules.append(f"t_{i}: {json.dumps(name + after_name)} a_{i}")
        rules.append(f"a_{i}: {json_body(dict(schema) if schema else {'type': 'object'})}")
    tail = " ".join(json.dumps(t) for t in (after_arguments, close) if t)
    head = f"call_rest: {json.dumps(before_name)} ({' | '.join(alternatives)}) {tail}"
    return "\n".join([head, *rules])


class Hermes(CallFormat):
    name = "hermes"
    triggers = (OPEN,)
    closers = ">"
    result_role = "user"
    results_together = True

    def declare(self, tools: Sequence[ToolDescription]) -> str:
        lines = "".join("\n" + tojson(t) for t in openai_tools(tools))
        return INTRO + lines + OUTRO

    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        return tagged_calls(calls, OPEN, CLOSE)

    def result(self, name: str, text: str) -> list[Piece]:
        return [Piece("<tool_response>\n", True), Piece(text), Piece("\n</tool_response>", True)]

    def read(self, text: str, final: bool) -> tuple[list[ToolCall], int] | None:
        end = text.find(CLOSE)
        if end < 0:
            if not final:
                return None
            body = text[len(OPEN) :].strip()
            if not body:
                raise CallSyntaxError("the call is empty")
            return [call_object(body)], len(text)
        try:
            return [call_object(text[len(OPEN) : end].strip())], end + len(CLOSE)
        except CallSyntaxError as exc:
            raise CallSyntaxError(exc.message, exc.name, end + len(CLOSE)) from exc

    def markers(self) -> tuple[str, ...]:
        return (OPEN, CLOSE)

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        return json_call_rest(tools, '\n{"name": "', '", "arguments": ', "}\n", CLOSE)
