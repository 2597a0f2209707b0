"""GigaChat 3's and 3.1's tool calls, as `GigaChat3-10B-A1.8B.jinja` and
`GigaChat3.1-10B-A1.8B.jinja` write them: one JSON call after the assistant's text,

    3:    TEXT<|message_sep|>\\n\\nfunction call<|role_sep|>\\n{"name": …, "arguments": {…}}
    3.1:  TEXT<|function_call|>{"name": …, "arguments": {…}}

then `<|message_sep|>\\n\\n`, the end of a message. The templates write only the first of a
turn's calls; several are written one after another, each with its marker, which the reader
reads. Tools are declared as a TypeScript `namespace functions` (the templates' own
`json_schema_to_typescript`, in a `function descriptions` message); a result comes back as a
`function result` message (the `tool` turn). Neither family thinks.

The reader takes text before a call as answer text, `"parameters"` for `"arguments"` and
arguments as a JSON string (`call_object`), and reads a `<|message_sep|>` that no call follows
as the end of a message: no call, no answer text. A call whose JSON can never be a call is a
`CallSyntaxError` taking its JSON. The grammar holds the name to a declared tool and the
arguments to its schema, after llama.cpp's trigger words (`<|message_sep|>\\n\\nfunction
call<|role_sep|>\\n`, `<|function_call|>`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.domain.messages import ToolDescription
from app.templates.calls.format import CallFormat, CallSyntaxError, Piece, ToolCall, openai_tools
from app.templates.calls.hermes import call_object, json_call_rest, skip_space
from app.templates.calls.llama3 import name_guess
from app.templates.calls.reading import Read, Remembering, Scan

ROLE_SEP, MESSAGE_SEP, FUNCTION_CALL = "<|role_sep|>", "<|message_sep|>", "<|function_call|>"
CALL_ROLE = "function call" + ROLE_SEP
HEADER = MESSAGE_SEP + "\n\n" + CALL_ROLE + "\n"  # GigaChat 3's, llama.cpp's trigger word
EXTRA_KEYS = ("format", "maxItems", "maximum", "minItems", "minimum", "pattern")


def _comment(indent: str, text: str) -> str:
    """`text`'s non-blank lines as `//` comments."""
    return "".join(f"{indent}// {line}\n" for line in text.split("\n") if line.strip())


def _property(key: str, fields: Mapping[str, Any], required: Sequence[str], indent: str) -> str:
    """One property of an object type, with its comments and default."""
    out = _comment(indent, str(fields.get("description", "")))
    for extra, value in fields.items():
        if extra in EXTRA_KEYS:
            shown = f'"{value}"' if isinstance(value, str) else str(value)
            out += f"{indent}// {extra}: {shown}\n"
    out += f"{indent}{key}{'' if key in required else '?'}: {typescript(fields, indent + '  ')},"
    if "default" in fields:
        value = fields["default"]
        out += f' // default: "{value}"' if isinstance(value, str) else f" // default: {value}"
    return out + "\n"


def _object(schema: Mapping[str, Any], indent: str) -> str:
    properties = schema.get("properties") or {}
    required = schema.get("required") or []
    body = "".join(_property(k, v, required, indent) for k, v in properties.items())
    extra = schema.get("additionalProperties")
    if extra is True or isinstance(extra, Mapping):
        kind = typescript(extra if isinstance(extra, Mapping) else {}, indent + "  ")
        body += f"{indent}[key: string]: {kind}\n"
    return "{\n" + body + indent[:-2] + "}"


def typescript(schema: Mapping[str, Any], indent: str = "") -> str:
    """A JSON schema as the templates' `json_schema_to_typescript` writes its type."""
    kind, enum = schema.get("type"), schema.get("enum")
    if kind == "object":
        return _object(schema, indent)
    if kind == "string":
        if enum:
            return " | ".join(f'"{v}"' for v in enum)
        return "Date" if schema.get("format") in ("date-time", "date") else "string"
    if kind in ("number", "integer"):
        return " | ".join(str(v) for v in enum) if enum else "number"
    if kind == "boolean":
        return "boolean"
    if kind == "array":
        items = schema.get("items")
        return typescript(items, indent) + "[]" if isinstance(items, Mapping) else "Array<any>"
    return "any"


def _declare_one(tool: Mapping[str, Any]) -> str:
    params = tool.get("parameters")
    typed = isinstance(params, Mapping) and params.get("properties")
    arguments = f"_: {typescript(params, '  ')}" if typed and params else ""
    signature = f"type {tool['name']} = ({arguments}) => any;\n"
    return _comment("", str(tool.get("description") or "")) + signature


def _json_call(text: str, at: int, final: bool, scan: Scan) -> Read:
    """The JSON call at `at` (after its marker) and where it ends; None while it is open."""
    at = skip_space(text, at)
    if at == len(text):
        if not final:
            return None
        raise CallSyntaxError("the call is empty")
    if text[at] != "{":
        raise CallSyntaxError("no JSON object follows the call's marker", "", at)
    end = scan.json_end(text, at)
    if end is None:
        if not final:
            return None
        raise CallSyntaxError("the call's JSON never closes", name_guess(text[at:]))
    try:
        return [call_object(text[at:end])], end
    except CallSyntaxError as exc:
        raise CallSyntaxError(exc.message, exc.name, end) from exc


class _GigaChat(Remembering, CallFormat):
    """What GigaChat 3 and 3.1 share: all but the marker a call follows (`triggers[0]`)."""

    closers = ">}"
    separator = ""

    def declare(self, tools: Sequence[ToolDescription]) -> str:
        sections = [_declare_one(t["function"]) for t in openai_tools(tools)]
        return "\n".join(["namespace functions {", *sections, "} // namespace functions"])

    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        out: list[Piece] = []
        for call in calls:
            out += [Piece(self.triggers[0] + '{"name": "', True), Piece(call.name)]
            out += [Piece('", "arguments": ', True), Piece(call.arguments), Piece("}", True)]
        return out

    def result(self, name: str, text: str) -> list[Piece]:
        return [Piece(text)]

    def markers(self) -> tuple[str, ...]:
        return (FUNCTION_CALL, MESSAGE_SEP, MESSAGE_SEP + "\n\n", ROLE_SEP, ROLE_SEP + "\n")

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        return json_call_rest(tools, '{"name": "', '", "arguments": ', "}")


class GigaChat31(_GigaChat):
    """GigaChat 3.1: `<|function_call|>{…}`."""

    name = "gigachat3.1"
    triggers = (FUNCTION_CALL, MESSAGE_SEP)

    def read_with(self, text: str, final: bool, scan: Scan) -> Read:
        if text.startswith(FUNCTION_CALL):
            return _json_call(text, len(FUNCTION_CALL), final, scan)
        return [], skip_space(text, len(MESSAGE_SEP))  # the end of a message


class GigaChat3(_GigaChat):
    """GigaChat 3: a `function call` message after the assistant's."""

    name = "gigachat3"
    triggers = (HEADER, MESSAGE_SEP)

    def read_with(self, text: str, final: bool, scan: Scan) -> Read:
        at = skip_space(text, len(MESSAGE_SEP))
        if text.startswith(CALL_ROLE, at):
            return _json_call(text, at + len(CALL_ROLE), final, scan)
        if at == len(text) or CALL_ROLE.startswith(text[at:]):
            if not final:
                return None
            if at < len(text):
                raise CallSyntaxError("the call was cut off in its header")
        return [], at  # the end of a message
