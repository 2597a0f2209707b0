"""The common pythonic call list read without Python's parser: `[name(key='text', n=3, on=True)]`.

Guarantees: `fast_calls` returns the calls only for a list (or one bare call) whose every
argument is a plain literal — a string in either quote holding no quote of its kind, no
backslash and no line break, a decimal number, `True`/`False`/`None` or `true`/`false`/`null` —
written with blanks and line breaks only between tokens, no name or key a Python keyword and no
key repeated; for exactly that text `ast` reads the same calls (names, arguments, their order
and JSON). Anything else is None, and the caller reads it with `ast` (which says what is wrong).
"""

from __future__ import annotations

import math
import re
from keyword import iskeyword
from typing import Any

from app.templates.calls.format import ToolCall
from app.templates.calls.hermes import tojson

_WS = r"[ \t\n]*"
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_HEAD = re.compile(rf"({_IDENT}(?:\.{_IDENT})*){_WS}\({_WS}")
_SINGLE = r"'([^'\\\n\r\x00\ud800-\udfff]*)'"  # no quote of its kind, escape or line break
_DOUBLE = r'"([^"\\\n\r\x00\ud800-\udfff]*)"'
_ARGUMENT = re.compile(
    rf"({_IDENT}){_WS}={_WS}(?:{_SINGLE}|{_DOUBLE}"
    r"|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)(?![\w.])"
    rf"|(True|False|None|true|false|null)(?!\w)){_WS}(,?){_WS}"
)
_AFTER = re.compile(rf"{_WS}(,?){_WS}")
_WORDS: dict[str, Any] = {
    "True": True,
    "False": False,
    "None": None,
    "true": True,
    "false": False,
    "null": None,
}


def fast_calls(text: str) -> list[ToolCall] | None:
    """The calls of `text` (stripped: `[call, …]` or one bare call) when it is the common
    case (see the module guarantees), else None."""
    listed = text.startswith("[")
    pos = 1 if listed else 0
    if listed:
        pos = _AFTER.match(text, pos).end()  # type: ignore[union-attr]
    calls: list[ToolCall] = []
    while True:
        read = _call(text, pos)
        if read is None:
            return None
        call, pos = read
        calls.append(call)
        if not listed:
            return calls if pos == len(text) else None
        after = _AFTER.match(text, pos)
        comma, pos = after.group(1), after.end()  # type: ignore[union-attr]
        if text[pos:] == "]":
            return calls
        if not comma:
            return None


def _call(text: str, pos: int) -> tuple[ToolCall, int] | None:
    """The call at `pos` and where its `)` ends; None where it is not the common case."""
    head = _HEAD.match(text, pos)
    if head is None or any(iskeyword(part) for part in head.group(1).split(".")):
        return None
    pos = head.end()
    arguments: dict[str, Any] = {}
    comma = True
    while not text.startswith(")", pos):
        found = _ARGUMENT.match(text, pos) if comma else None
        if found is None:
            return None
        key, single, double, number, word, after = found.groups()
        if key in arguments or iskeyword(key):
            return None
        if number is not None:
            value: Any = _number(number)
            if value is None:
                return None
        elif word is not None:
            value = _WORDS[word]
        else:
            value = single if single is not None else double
        arguments[key] = value
        comma, pos = bool(after), found.end()
    return ToolCall(head.group(1), tojson(arguments)), pos + 1


def _number(text: str) -> int | float | None:
    """The number `text` writes; None where `ast` may read it otherwise (not finite, or more
    digits than Python converts)."""
    try:
        value = float(text) if text.strip("-0123456789") else int(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
