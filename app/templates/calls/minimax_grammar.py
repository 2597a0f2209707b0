"""The lazy grammar of MiniMax-M3's calls: the rest of a block after the namespace token that
starts it, as `MiniMax-M3.jinja` writes it (see `minimax`).

Guarantees: `minimax_call_rest` gives Lark rules defining `call_rest`: `<tool_call>`, a newline,
one or more calls each to a declared tool (`NS<invoke name="NAME">`, its arguments, then
`NS</invoke>` and a newline), then `NS</tool_call>`. Each argument is a tag named after one of
the tool's properties, its required ones first in the schema's order then any optional ones
(as llama.cpp's MiniMax-M3 grammar orders them); its value is held to the property's type: an
integer, a number, a boolean, one of an `enum`'s values, an object's own properties as tags,
an array's entries as `NS<item>` tags, and text (never holding `NS`) for a string or a type the
grammar cannot hold. A tool with no schema takes any tags with text values. The namespace
token and `<tool_call>`/`</tool_call>` are literals of their own, so a vocabulary's control
tokens are written as tokens.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

NS = "]<]minimax[>["
_NS = json.dumps(NS)
_NS_RE = "".join(f"\\{c}" if c in "[]" else c for c in NS)
MAX_NESTING = 8  # deeper values are held as text
_RULES = [
    f"mm_str: MM_TEXT {_NS} | MM_SPELLED",
    # text, then the namespace token as a token of its own (a control token), or the text and
    # the token spelled out as one lexeme (a lexer takes the longest match)
    f"MM_TEXT: /(.|\\n)*/ & ~/(.|\\n)*{_NS_RE}(.|\\n)*/",
    f"MM_SPELLED: /(.|\\n)*{_NS_RE}/ & ~/(.|\\n)*{_NS_RE}(.|\\n)+/",
    "MM_INT: /-?(0|[1-9][0-9]*)/",
    "MM_NUMBER: /-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?/",
    "MM_KEY: /[A-Za-z_][A-Za-z0-9_.\\-]*/",
    f'mm_any: {_NS} "<" MM_KEY ">" mm_str "</" MM_KEY ">"',
]


def _types(fields: Mapping[str, Any]) -> set[str]:
    kind = fields.get("type")
    return {kind} if isinstance(kind, str) else {str(k) for k in kind or ()}


def _literal(value: Any) -> str:
    """An enum value as the template writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _Rules:
    """The rules of one grammar, each new one named in turn."""

    def __init__(self) -> None:
        self.rules = list(_RULES)

    def new(self, body: str) -> str:
        name = f"mm_{len(self.rules)}"
        self.rules.append(f"{name}: {body}")
        return name

    def value(self, fields: Any, depth: int) -> str:
        """A value of the property `fields` describes, then the `NS` its close begins with."""
        fields = fields if isinstance(fields, Mapping) else {}
        types = _types(fields)
        enum = fields.get("enum")
        if isinstance(enum, list) and enum and None not in enum:
            texts = [_literal(v) for v in enum]
            options = " | ".join(json.dumps(t) for t in texts if t)
            return f"({options}){'?' if '' in texts else ''} {_NS}" if options else _NS
        if depth > MAX_NESTING or not types or "string" in types:
            return "mm_str"
        scalar = {"integer": "MM_INT", "number": "MM_NUMBER", "boolean": '("true" | "false")'}
        if len(types) == 1 and (kind := next(iter(types))) in scalar:
            return f"{scalar[kind]} {_NS}"
        if types == {"object"} and isinstance(fields.get("properties"), Mapping):
            return f"{self.members(fields, depth)} {_NS}".lstrip()
        if types == {"array"}:
            item = self.value(fields.get("items"), depth + 1)
            return f'({_NS} "<item>" {item} "</item>")* {_NS}'
        return "mm_str"

    def members(self, schema: Mapping[str, Any], depth: int) -> str:
        """An object's properties as tags: the required ones in order, then any optional."""
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return "mm_any*"
        required = set(schema.get("required") or ())
        firsts: list[str] = []
        others: list[str] = []
        for key, fields in properties.items():
            rule = self.new(
                f"{_NS} {json.dumps(f'<{key}>')} {self.value(fields, depth + 1)}"
                f" {json.dumps(f'</{key}>')}"
            )
            (firsts if key in required else others).append(rule)
        return " ".join([*firsts, *([f"({' | '.join(others)})*"] if others else [])])


def minimax_call_rest(tools: Mapping[str, Mapping[str, Any] | None]) -> str:
    """Lark rules defining `call_rest` (see the module guarantees)."""
    rules = _Rules()
    calls = []
    for name, schema in tools.items():
        args = "mm_any*" if schema is None else rules.members(schema, 0)
        opening = json.dumps(f'<invoke name="{name}">')
        calls.append(rules.new(f'{_NS} {opening} {args} {_NS} "</invoke>" "\\n"'))
    head = f'call_rest: "<tool_call>" "\\n" ({" | ".join(calls)})+ {_NS} "</tool_call>"'
    return "\n".join([head, *rules.rules])
