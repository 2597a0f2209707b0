"""Qwen3-Coder's XML tool calls, as `Qwen3-Coder.jinja` writes them:

    <tool_call>
    <function=NAME>
    <parameter=KEY>
    VALUE
    </parameter>
    </function>
    </tool_call>

A string value is written as it is, any other value as JSON (the template writes non-string
scalars with Jinja's `string`, which spells `true` as `True`; JSON is what the reader and the
model's tools take). Tools are declared in the system turn as the template's `<tools>` XML,
results go back in a user turn, each in `<tool_response>`.

The reader takes a call with or without its opening `<tool_call>` (some models start at
`<function=`) and a JSON call inside `<tool_call>` (the Hermes shape). A value is typed by the
tool's schema when the format was given the tools' schemas (`QwenXml(schemas)`): a string
parameter stays text (`null` is null where the schema allows it), a union with string is the
JSON value of another of its types when it parses as one, else text; without a schema a value
is JSON when it parses, else text. The grammar holds the function to a declared name, its
parameters to the schema's names (required ones present, in the schema's order), and each
value to its type: JSON for a typed non-string value, free text (never `\n</parameter>`) for
a string.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from app.constrain.constraint import json_body
from app.domain.messages import ToolDescription
from app.templates.calls.format import (
    CallFormat,
    CallSyntaxError,
    Piece,
    ToolCall,
    arguments_of,
    openai_tools,
)
from app.templates.calls.hermes import call_object, tojson
from app.templates.calls.reading import Read, Remembering, Scan

OPEN, CLOSE, FUNCTION, END_FUNCTION = "<tool_call>", "</tool_call>", "<function=", "</function>"
_PARAM = re.compile(r"<parameter=([^>\n]+)>\n?(.*?)\n?</parameter>", re.DOTALL)
INTRO = "# Tools\n\nYou have access to the following tools:\n\n<tools>"
OUTRO = (
    "\n</tools>\n\nIf you choose to call a tool ONLY reply in the following format with NO suffix:"
    "\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\n"
    "value_1\n</parameter>\n<parameter=example_parameter_2>\nvalue_2\n</parameter>\n"
    "</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the"
    " specified format: the tool calling block MUST begin with an opening <tool_call> tag and"
    " end with a closing </tool_call> tag.\n- Required parameters MUST be specified\n- You may"
    " provide optional reasoning for your function call in natural language BEFORE the"
    " function call, but NOT after\n- If there is no function call available, answer the"
    " question like normal with your current knowledge and do not tell the user about"
    " function calls\n</IMPORTANT>"
)
# A string value and its close: any text, then the first `\n</parameter>\n`.
_STRING_VALUE = "/(.|\\n)*\\n<\\/parameter>\\n/ & ~/(.|\\n)*\\n<\\/parameter>(.|\\n)(.|\\n)+/"


def _jinja_string(value: Any) -> str:
    """`value | string` as Jinja writes it (Python's `str`)."""
    return value if isinstance(value, str) else str(value)


def _extra(fields: Any, handled: Sequence[str]) -> str:
    """The template's `render_extra_keys`: each other key as `<key>value</key>`."""
    if not isinstance(fields, Mapping):
        return ""
    out = []
    for key, value in fields.items():
        if key in handled:
            continue
        nested = isinstance(value, Mapping | list | tuple)
        out.append(f"\n<{key}>{tojson(value) if nested else _jinja_string(value)}</{key}>")
    return "".join(out)


def _declare_one(tool: Mapping[str, Any]) -> str:
    out = f"\n<function>\n<name>{tool['name']}</name>"
    if "description" in tool:
        out += f"\n<description>{tool['description'].strip()}</description>"
    out += "\n<parameters>"
    params = tool.get("parameters")
    properties = params.get("properties") if isinstance(params, Mapping) else None
    for key, fields in (properties or {}).items() if isinstance(properties, Mapping) else ():
        out += f"\n<parameter>\n<name>{key}</name>"
        if isinstance(fields, Mapping) and "type" in fields:
            out += f"\n<type>{_jinja_string(fields['type'])}</type>"
        if isinstance(fields, Mapping) and "description" in fields:
            out += f"\n<description>{str(fields['description']).strip()}</description>"
        out += _extra(fields, ("name", "type", "description")) + "\n</parameter>"
    out += _extra(params, ("type", "properties")) + "\n</parameters>"
    return out + _extra(tool, ("type", "name", "description", "parameters")) + "\n</function>"


def _types(schema: Mapping[str, Any]) -> set[str]:
    """The JSON types a property's schema allows (from `enum` when it names none)."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {str(k) for k in kind}
    if "enum" in schema:
        return {_json_type(v) for v in schema["enum"]}
    return set()


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    names = {float: "number", str: "string", list: "array", dict: "object"}
    return names.get(type(value), "string")


_JSON_STARTS = frozenset('{["-0123456789tfnNI')  # how JSON (and Python's NaN, Infinity) begin


def typed_value(raw: str, schema: Mapping[str, Any] | None) -> Any:
    """A parameter's text as the value the schema asks for (see the module guarantees)."""
    types = _types(schema) if schema else set()
    if raw.lstrip()[:1] not in _JSON_STARTS:
        return raw  # no JSON value starts so (what `json.loads` would say, without raising)
    try:
        parsed: Any = json.loads(raw)
    except ValueError:
        return raw
    if "string" not in types:
        return parsed
    kind = _json_type(parsed)
    if kind == "integer" and "number" in types:
        kind = "number"
    return parsed if kind in types - {"string"} else raw


class QwenXml(Remembering, CallFormat):
    name = "qwen3-coder"
    triggers = (OPEN, FUNCTION)
    closers = ">"
    results_together = True
    result_role = "user"

    def __init__(self, schemas: Mapping[str, Mapping[str, Any] | None] | None = None) -> None:
        self.schemas = dict(schemas or {})

    def declare(self, tools: Sequence[ToolDescription]) -> str:
        body = "".join(_declare_one(t["function"]) for t in openai_tools(tools))
        return INTRO + body + OUTRO

    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        out: list[Piece] = []
        for i, call in enumerate(calls):
            out.append(Piece(("\n" if i else "") + OPEN + "\n" + FUNCTION, True))
            out.append(Piece(call.name))
            out.append(Piece(">\n", True))
            args = arguments_of(call)
            for key, value in args.items() if isinstance(args, dict) else ():
                out += [Piece("<parameter=", True), Piece(key), Piece(">\n", True)]
                out.append(Piece(value if isinstance(value, str) else tojson(value)))
                out.append(Piece("\n</parameter>\n", True))
            if not isinstance(args, dict):
                out.append(Piece(call.arguments + "\n"))
            out.append(Piece(END_FUNCTION + "\n" + CLOSE, True))
        return out

    def result(self, name: str, text: str) -> list[Piece]:
        return [Piece("<tool_response>\n", True), Piece(text), Piece("\n</tool_response>\n", True)]

    def read_with(self, text: str, final: bool, scan: Scan) -> Read:
        at = len(OPEN) if text.startswith(OPEN) else 0
        body = text[at:].lstrip()
        if at and body.startswith("{"):
            return self._json_call(text, final, scan)
        if not body.startswith(FUNCTION):
            if not final and FUNCTION.startswith(body):
                return None
            raise CallSyntaxError(f"no {FUNCTION}NAME> follows {OPEN}", "", len(OPEN))
        start = len(text) - len(body)
        end = scan.find(text, END_FUNCTION, start)
        if end < 0:
            if not final:
                scan.wait_for(text, END_FUNCTION)
                return None
            end = len(text)
        length = _past_close(text, end + len(END_FUNCTION), final)
        if length is None:
            return None
        try:
            return [self._call(text[start + len(FUNCTION) : end])], length
        except CallSyntaxError as exc:
            raise CallSyntaxError(exc.message, exc.name, length) from exc

    def _call(self, inner: str) -> ToolCall:
        name, sep, params = inner.partition(">")
        name = name.strip()
        if not sep or not name or "\n" in name or "<" in name:
            raise CallSyntaxError("the function has no name", "")
        schema = self.schemas.get(name) or {}
        properties = schema.get("properties") or {}
        args = {
            key.strip(): typed_value(value, properties.get(key.strip()))
            for key, value in _PARAM.findall(params)
        }
        leftover = _PARAM.sub("", params).strip()
        if leftover:
            raise CallSyntaxError(f"text outside any parameter: {leftover[:60]!r}", name)
        return ToolCall(name, tojson(args))

    def _json_call(self, text: str, final: bool, scan: Scan) -> Read:
        end = scan.find(text, CLOSE)
        if end < 0 and not final:
            scan.wait_for(text, CLOSE)
            return None
        stop = len(text) if end < 0 else end
        try:
            call = call_object(text[len(OPEN) : stop].strip())
        except CallSyntaxError as exc:
            raise CallSyntaxError(exc.message, exc.name, stop + len(CLOSE)) from exc
        return [call], min(len(text), stop + len(CLOSE))

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        rules = ["STRING_VALUE: " + _STRING_VALUE, "PARAM_NAME: /[A-Za-z0-9_.\\-]+/"]
        names = []
        for i, (name, schema) in enumerate(tools.items()):
            names.append(f"t_{i}")
            rules.append(f"t_{i}: {json.dumps(name + '>' + chr(10))} {_params(i, schema, rules)}")
        head = f'call_rest: "\\n{FUNCTION}" ({" | ".join(names)}) "{END_FUNCTION}\\n" "{CLOSE}"'
        return "\n".join([head, *rules])


def _past_close(text: str, at: int, final: bool) -> int | None:
    """Where a call whose function ends at `at` ends: past `</tool_call>` when it follows;
    None while what follows may still become it."""
    rest = text[at:].lstrip()
    if rest.startswith(CLOSE):
        return len(text) - len(rest) + len(CLOSE)
    if not final and CLOSE.startswith(rest):
        return None
    return min(at, len(text))


def _params(i: int, schema: Mapping[str, Any] | None, rules: list[str]) -> str:
    """The grammar of tool `i`'s parameters (adding their rules to `rules`)."""
    properties = (schema or {}).get("properties")
    if not isinstance(properties, Mapping) or not properties:
        any_param = '"<parameter=" PARAM_NAME ">\\n" STRING_VALUE'
        return f"({any_param})*" if schema is None or properties is None else ""
    required = set((schema or {}).get("required") or ())
    defs = {k: v for k, v in (schema or {}).items() if k in ("$defs", "definitions")}
    parts = []
    for j, (key, fields) in enumerate(properties.items()):
        value = _value_rule(fields if isinstance(fields, Mapping) else {}, defs)
        rules.append(f"p_{i}_{j}: {json.dumps('<parameter=' + key + '>' + chr(10))} {value}")
        parts.append(f"p_{i}_{j}" if key in required else f"p_{i}_{j}?")
    return " ".join(parts)


def _value_rule(fields: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    """A value and its close: free text for a string (or an untyped value), else JSON (with
    the tool schema's definitions, which a `$ref` in the value points into)."""
    types = _types(fields)
    if not types or "string" in types:
        if "enum" in fields and types == {"string"}:
            options = " | ".join(json.dumps(f"{v}\n</parameter>\n") for v in fields["enum"])
            return f"({options})"
        return "STRING_VALUE"
    return f'{json_body({**fields, **defs})} "\\n</parameter>\\n"'
