"""The grammar of one pythonic call list (`[name(key=value, …), …]` then its closing marker).

Guarantees: each call's name is one of the tools; a tool with declared properties takes only
those, in their declared order, each required one present (an optional one may be left
out); a string value is a single-quoted Python string (an enum one of its values), a boolean
`True`/`False`, a null `None`, a plain list of strings a Python list of them (or JSON), and
any other value JSON held to its schema (JSON numbers,
arrays and objects are what the reader takes, `true`/`false`/`null` included); a tool whose
schema is unknown takes any `key=value` arguments. Every call the reader's format writes with
simple values is a sentence of this grammar.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from app.constrain.constraint import json_body

PY_STRING = r"PY_STRING: /'([^'\\\n\r]|\\.)*'/"
ARG_NAME = r"PY_ARG_NAME: /[A-Za-z_][A-Za-z0-9_]*/"
_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def python_string(text: str) -> str:
    """`text` as a single-quoted Python literal (escaped: it reads back to `text`)."""
    out = [_ESCAPES.get(c) or (f"\\x{ord(c):02x}" if _control(c) else c) for c in text]
    return "'" + "".join(out) + "'"


def _control(c: str) -> bool:
    return ord(c) < 32 or ord(c) == 127


def pythonic_call_rest(tools: Mapping[str, Mapping[str, Any] | None], close: str) -> str:
    """Lark for `call_rest`: the call list after its opening marker, then `close` (a literal
    of its own, so a marker that is one control token is written as that token)."""
    rules = [
        PY_STRING,
        ARG_NAME,
        'py_any: PY_STRING | "True" | "False" | "None" | ' + json_body({}),
    ]
    names = []
    for i, (name, schema) in enumerate(tools.items()):
        names.append(f"py_t_{i}")
        rules.append(f'py_t_{i}: {json.dumps(name + "(")} {_arguments(i, schema, rules)} ")"')
    rules.append(f"py_call: {' | '.join(names)}")
    head = f'call_rest: "[" py_call (", " py_call)* "]" {json.dumps(close)}'
    return "\n".join([head, *rules])


def _arguments(i: int, schema: Mapping[str, Any] | None, rules: list[str]) -> str:
    """The grammar of tool `i`'s arguments (adding their rules to `rules`)."""
    properties = (schema or {}).get("properties")
    if not isinstance(properties, Mapping):
        if schema is not None and properties is None and schema.get("type") == "object":
            return '""'  # an object with no properties: no arguments
        one = 'PY_ARG_NAME "=" py_any'
        return f'({one} (", " {one})*)?'
    if not properties:
        return '""'
    required = set((schema or {}).get("required") or ())
    defs = {k: v for k, v in (schema or {}).items() if k in ("$defs", "definitions")}
    keys = list(properties)
    for j, key in enumerate(keys):
        fields = properties[key] if isinstance(properties[key], Mapping) else {}
        rules.append(f"py_p_{i}_{j}: {json.dumps(key + '=')} {_value(fields, defs)}")
    for j in range(len(keys) + 1):
        for first in (True, False):
            rules.append(f"{_rest_name(i, j, first)}: {_rest(i, j, first, keys, required)}")
    return _rest_name(i, 0, True)


def _rest_name(i: int, j: int, first: bool) -> str:
    return f"py_r_{i}_{j}_{'f' if first else 'n'}"


def _rest(i: int, j: int, first: bool, keys: list[str], required: set[str]) -> str:
    """Arguments `j` on (`first`: none written before them, so no leading `, `)."""
    if j == len(keys):
        return '""'
    sep = "" if first else '", " '
    with_it = f"{sep}py_p_{i}_{j} {_rest_name(i, j + 1, False)}"
    if keys[j] in required:
        return with_it
    return f"{with_it} | {_rest_name(i, j + 1, first)}"


def _value(fields: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    """The grammar of one argument's value under its schema `fields`."""
    types = fields.get("type")
    kinds = {types} if isinstance(types, str) else set(types or ())
    if kinds == {"string"}:
        options = fields.get("enum")
        if isinstance(options, list) and all(isinstance(o, str) for o in options) and options:
            return "(" + " | ".join(json.dumps(python_string(o)) for o in options) + ")"
        return "PY_STRING"
    if kinds == {"boolean"}:
        return '("True" | "False")'
    if kinds == {"null"}:
        return '"None"'
    body = json_body({**fields, **defs})
    if kinds == {"array"} and set(fields) <= {"type", "items", "description", "title"}:
        items = fields.get("items")
        if (
            isinstance(items, Mapping)
            and set(items) <= {"type", "description"}
            and items.get("type") == "string"
        ):  # as the template writes it: `['a', 'b']`
            return f'("[" (PY_STRING (", " PY_STRING)*)? "]" | {body})'
    return body
