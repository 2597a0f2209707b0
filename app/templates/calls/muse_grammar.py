"""The grammar of Muse Glimmer's calls (`muse.py`): after `<|start|>`, `assistant to=NAME`, the
message marker and one ATEM block whose invoke names the same declared tool, each parameter one
of the tool's properties with a value of its type.

Guarantees: every marker is a literal of its own (so a vocabulary's control token is written as
that token); the header and the invoke name one tool; a string value is any text that does not
close the parameter, a typed value JSON of its schema (with the tool's `$defs`), an enumerated
string one of its values, a tool without properties (or with any schema) takes any parameters;
parameters come in any order, as llama.cpp's Muse grammar takes them. `call_first` is the call
written right after the generation prompt (`<|start|>assistant`), `call_rest` one after a
`<|start|>` the model writes, `answer_first` the header of the answer to `user`; thoughts to
`self` (each ended by `<|eom|>` and a new message opened) may come before either.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from app.constrain.constraint import json_body

START, MESSAGE, EOM, EOT, TO = "<|start|>", "<|message|>", "<|eom|>", "<|eot|>", " to="
BLOCK, BLOCK_END = "<atem:function_calls>", "</atem:function_calls>"
INVOKE, INVOKE_END = "<atem:invoke", "</atem:invoke>"
PARAM, PARAM_END = "<atem:parameter", "</atem:parameter>"
_CLOSE = "<\\/atem:parameter>"
_EOM = "<\\|eom\\|>"
_RULES = [
    # a string: its text then the close as a token of its own (a control token), or the text
    # and its spelled-out close as one lexeme (a lexer takes the longest match)
    f"muse_text: MUSE_TEXT {json.dumps(PARAM_END)} | MUSE_CLOSED",
    f"MUSE_TEXT: /(.|\\n)*/ & ~/(.|\\n)*{_CLOSE}(.|\\n)*/",
    f"MUSE_CLOSED: /(.|\\n)*{_CLOSE}/ & ~/(.|\\n)*{_CLOSE}(.|\\n)+/",
    "MUSE_KEY: /[A-Za-z0-9_.\\-]+/",
    f'muse_any: {json.dumps(PARAM)} " name=\\"" MUSE_KEY "\\">" muse_text "\\n"',
    # thoughts to `self`, each ended and a message opened after it, may come before a call or
    # the header of the answer to `user`
    "answer_first: muse_thought* muse_answer",
    f"muse_thought: {json.dumps(TO + 'self')} {json.dumps(MESSAGE)} muse_thought_text"
    f' {json.dumps(START)} "assistant"',
    f"muse_thought_text: MUSE_THOUGHT {json.dumps(EOM)} | MUSE_THOUGHT_CLOSED",
    f"MUSE_THOUGHT: /(.|\\n)*/ & ~/(.|\\n)*{_EOM}(.|\\n)*/",
    f"MUSE_THOUGHT_CLOSED: /(.|\\n)*{_EOM}/ & ~/(.|\\n)*{_EOM}(.|\\n)+/",
    f"muse_answer: {json.dumps(TO + 'user')} {json.dumps(MESSAGE)} | {json.dumps(MESSAGE)}",
]


def _lit(*parts: str) -> str:
    return " ".join(json.dumps(p) for p in parts)


def _types(fields: Mapping[str, Any]) -> set[str]:
    """The JSON types a property's schema names."""
    kind = fields.get("type")
    if isinstance(kind, str):
        return {kind}
    return {str(k) for k in kind} if isinstance(kind, list) else set()


def _value(fields: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    """A parameter's value and its close."""
    types = _types(fields)
    if not types or "string" in types:
        if types == {"string"} and isinstance(fields.get("enum"), list):
            options = " | ".join(json.dumps(str(v)) for v in fields["enum"])
            return f"({options}) {json.dumps(PARAM_END)}"
        return "muse_text"
    return f"{json_body({**fields, **defs})} {json.dumps(PARAM_END)}"


def _params(i: int, schema: Mapping[str, Any] | None, rules: list[str]) -> str:
    """Tool `i`'s parameters (their rules added to `rules`)."""
    properties = (schema or {}).get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return "muse_any*" if schema is None or properties is None else ""
    defs = {k: v for k, v in (schema or {}).items() if k in ("$defs", "definitions")}
    names = []
    for j, (key, fields) in enumerate(properties.items()):
        value = _value(fields if isinstance(fields, Mapping) else {}, defs)
        opened = _lit(PARAM, ' name="' + key + '">')
        rules.append(f'p_{i}_{j}: {opened} {value} "\\n"')
        names.append(f"p_{i}_{j}")
    return f"({' | '.join(names)})*"


def muse_call_rest(tools: Mapping[str, Mapping[str, Any] | None]) -> str:
    """Lark rules defining `call_first` and `call_rest` (see the module guarantees)."""
    rules = list(_RULES)
    names = []
    for i, (name, schema) in enumerate(tools.items()):
        names.append(f"t_{i}")
        head = _lit(TO + name, MESSAGE, BLOCK, "\n", INVOKE, f' name="{name}">\n')
        tail = _lit(INVOKE_END, "\n", BLOCK_END)
        rules.append(f"t_{i}: {head} {_params(i, schema, rules)} {tail}")
    heads = [
        f"call_first: muse_thought* ({' | '.join(names)})",
        'call_rest: "assistant" call_first',
    ]
    return "\n".join([*heads, *rules])
