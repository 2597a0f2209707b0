"""Gemma 4's tool calls, as `google-gemma-4-31B-it.jinja` (and its `-interleaved` variant)
writes them:

    <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>

Arguments are written in Gemma 4's own syntax (`gemma4_values`): keys bare and sorted, a
string between `<|"|>` quotes, numbers, booleans and null bare, objects and arrays nested.
Several calls follow one another; the template ends a turn that calls with `<|tool_response>`
(the model's hand-over: llama.cpp stops generation at it), and a result comes back as
`<|tool_response>response:NAME{value:<|"|>TEXT<|"|>}<tool_response|>`. Thinking is a channel,
`<|channel>thought … <channel|>` (`think`).

The reader takes one call per `<|tool_call>`, text before a call as answer text, a call whose
`<tool_call|>` is missing at the end of the answer, and reads a `<|tool_response>` standing
after the calls as the end of the turn (no call, no answer text; `ends`: where it is one token,
it is a stop token, as llama.cpp stops there). The grammar holds the name to a declared tool
and the arguments to the tool's properties, in sorted order (as the template writes them),
each at most once and every required one present, each value to the property's type (a
string, a boolean, any value, or a number within the schema's bounds); llama.cpp's own Gemma 4
grammar holds only the name.
"""

from __future__ import annotations

import json
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
from app.templates.calls.gemma4_values import (
    QUOTE,
    Unreadable,
    gemma_value,
    read_object,
)
from app.templates.calls.hermes import skip_space, tojson
from app.templates.calls.reading import Read, Remembering, Scan

OPEN, CLOSE, CALL = "<|tool_call>", "<tool_call|>", "call:"
RESPONSE, RESPONSE_END = "<|tool_response>", "<tool_response|>"
THINK = ("<|channel>thought", "<channel|>")
TOOL, TOOL_END = "<|tool>", "<tool|>"
_VALUE_RULES = [
    'g4_value: g4_string | g4_object | g4_array | G4_NUMBER | "true" | "false" | "null"',
    # a string: its text then the quote as a token of its own (a control token), or the text
    # and its spelled-out closing quote as one lexeme (a lexer takes the longest match)
    f"g4_string: {json.dumps(QUOTE)} (G4_TEXT {json.dumps(QUOTE)} | G4_QUOTED)",
    'G4_TEXT: /(.|\\n)*/ & ~/(.|\\n)*<\\|"\\|>(.|\\n)*/',
    'G4_QUOTED: /(.|\\n)*<\\|"\\|>/ & ~/(.|\\n)*<\\|"\\|>(.|\\n)+/',
    'g4_object: "{" (g4_pair ("," g4_pair)*)? "}"',
    'g4_pair: G4_KEY ":" g4_value',
    "G4_KEY: /[A-Za-z_][A-Za-z0-9_.\\-]*/",
    'g4_array: "[" (g4_value ("," g4_value)*)? "]"',
    "G4_NUMBER: /-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?/",
]


_NUMBER_KEYWORDS = ("type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _declaration(tool: Mapping[str, Any]) -> str:
    """One tool as the template declares it (its parameters in Gemma 4's value syntax)."""
    params = tool.get("parameters") or {}
    return (
        f"{TOOL}declaration:{tool['name']}"
        f"{{description:{QUOTE}{tool.get('description', '')}{QUOTE},"
        f"parameters:{gemma_value(params)}}}{TOOL_END}"
    )


def _type_rule(fields: Any) -> str:
    """The grammar of a value of the property `fields` describes."""
    fields = fields if isinstance(fields, Mapping) else {}
    kind = fields.get("type")
    if kind == "string" and isinstance(fields.get("enum"), list):
        options = [
            json.dumps(QUOTE) + f" {json.dumps(str(v))} " + json.dumps(QUOTE)
            for v in fields["enum"]
        ]
        return "(" + " | ".join(options) + ")"
    if kind in ("integer", "number"):  # written bare, as JSON writes it: JSON's own bounds
        bounds = {k: v for k, v in fields.items() if k in _NUMBER_KEYWORDS}
        return "%json" + json.dumps(bounds)
    if kind == "boolean":
        return '("true" | "false")'
    return "g4_string" if kind == "string" else "g4_value"


def _arguments_rule(i: int, schema: Mapping[str, Any] | None, rules: list[str]) -> str:
    """Tool `i`'s `{…}`: its properties' keys in sorted order (as the template writes them),
    each at most once and every required one present, each with a value of its type."""
    properties = (schema or {}).get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return "g4_object"
    required = set((schema or {}).get("required") or ())
    keys = sorted(properties)
    for j, key in enumerate(keys):
        rules.append(f"k_{i}_{j}: {json.dumps(key + ':')} {_type_rule(properties[key])}")
    for j in reversed(range(len(keys))):
        after = f" r_{i}_{j + 1}" if j + 1 < len(keys) else ""
        optional = keys[j] not in required
        if j:  # r_: the keys from j on, after a key already written
            pair = f'"," k_{i}_{j}'
            rules.append(f"r_{i}_{j}: {f'({pair})?' if optional else pair}{after}")
        more = f" | f_{i}_{j + 1}" if optional and after else ""
        rules.append(f"f_{i}_{j}: k_{i}_{j}{after}{more}")  # f_: the first key written is j
    body = f"f_{i}_0" if required & set(keys) else f"f_{i}_0?"
    return f'"{{" {body} "}}"'


class Gemma4(Remembering, CallFormat):
    name = "gemma4"
    triggers = (OPEN, RESPONSE)
    closers = ">}]"
    separator = ""
    results_together = True
    think = THINK
    ends = (RESPONSE,)

    def declare(self, tools: Sequence[ToolDescription]) -> str:
        return "".join(_declaration(t["function"]) for t in openai_tools(tools))

    def write(self, calls: Sequence[ToolCall]) -> list[Piece]:
        out: list[Piece] = []
        for call in calls:
            args = arguments_of(call)
            body = gemma_value(args) if isinstance(args, dict) else "{" + call.arguments + "}"
            out += [Piece(OPEN + CALL, True), Piece(call.name + body), Piece(CLOSE, True)]
        return out

    def result(self, name: str, text: str) -> list[Piece]:
        return [
            Piece(f"{RESPONSE}response:", True),
            Piece(name),
            Piece("{value:" + QUOTE, True),
            Piece(text),
            Piece(QUOTE + "}" + RESPONSE_END, True),
        ]

    def markers(self) -> tuple[str, ...]:
        return (OPEN, CLOSE, QUOTE, RESPONSE, RESPONSE_END, *THINK)

    def read_with(self, text: str, final: bool, scan: Scan) -> Read:
        if text.startswith(RESPONSE):
            return [], len(RESPONSE)  # the end of a turn that calls
        if not final and "}" not in text and CLOSE not in text:  # (a held call is read
            scan.wait_for(text, "}", CLOSE)  # again only once one comes: one look at each)
            return None  # only a `}` closes its arguments, only its close ends a bad call
        found: tuple[str, dict[str, Any], int] | None = scan.recall(_WHOLE)
        if found is None:
            found = _name_and_arguments(text, final, scan)
            if found is None:
                return None
            scan.remember(_WHOLE, found)  # read once: more text does not change it
        name, args, end = found
        length = _past_close(text, end, final)
        return None if length is None else ([ToolCall(name, tojson(args))], length)

    def grammar_rest(self, tools: Mapping[str, Mapping[str, Any] | None]) -> str:
        rules = list(_VALUE_RULES)
        names = []
        for i, (name, schema) in enumerate(tools.items()):
            names.append(f"t_{i}")
            rules.append(f"t_{i}: {json.dumps(name)} {_arguments_rule(i, schema, rules)}")
        head = f"call_rest: {json.dumps(CALL)} ({' | '.join(names)}) {json.dumps(CLOSE)}"
        return "\n".join([head, *rules])


_WHOLE = "name and arguments"  # what a held call's `Scan` remembers once they are read
_NOT_IN_NAME = re.compile(r"[<>\n,:]")


def _name_and_arguments(
    text: str, final: bool, scan: Scan
) -> tuple[str, dict[str, Any], int] | None:
    """The call's name, its arguments and where they end; None while more text may complete
    them; `CallSyntaxError` for a call that can never be valid."""
    at = skip_space(text, len(OPEN))
    if not text.startswith(CALL, at):
        if not final and CALL.startswith(text[at:]):
            return None
        _bad(text, final, f"no {CALL}NAME follows {OPEN}", "")
        return None
    at += len(CALL)
    brace = text.find("{", at)
    name = text[at : brace if brace >= 0 else len(text)].strip()
    if brace < 0 or not name or _NOT_IN_NAME.search(name):
        if brace < 0 and not final and "<" not in name and "\n" not in name:
            return None
        _bad(text, final, "the call has no name", "")
        return None
    read = _arguments(text, brace, scan)
    if read is None:
        if not final:
            return None
        raise CallSyntaxError("the call's arguments never close", name)
    if isinstance(read, Unreadable):
        _bad(text, final, f"its arguments cannot be read ({read.reason})", name)
        return None
    return name, *read


def _arguments(text: str, brace: int, scan: Scan) -> tuple[dict[str, Any], int] | Unreadable | None:
    """The arguments' object at `brace` (read once per held call when whole)."""
    found = scan.recall(brace)
    if found is None:
        found = read_object(text, brace)
        if isinstance(found, tuple):
            scan.remember(brace, found)
    return found  # type: ignore[no-any-return]


def _past_close(text: str, at: int, final: bool) -> int | None:
    """Where a call whose arguments end at `at` ends: past `<tool_call|>`; None while what
    follows may still become it; at `at` when it is missing."""
    rest = skip_space(text, at)
    if text.startswith(CLOSE, rest):
        return rest + len(CLOSE)
    if not final and CLOSE.startswith(text[rest:]):
        return None
    return at


def _bad(text: str, final: bool, why: str, name: str) -> None:
    """A call that can never be valid: `CallSyntaxError` taking it through its `<tool_call|>`
    (all there is at the end of the answer); nothing while that close is still to come."""
    end = text.find(CLOSE)
    if end < 0 and not final:
        return None
    raise CallSyntaxError(why, name, None if end < 0 else end + len(CLOSE))
