"""Gemma 4's argument syntax, as `google-gemma-4-31B-it.jinja`'s `format_argument` writes it:
a string between `<|"|>` quotes (nothing inside is escaped), a number, `true`/`false`/`null`
bare, an object `{key:value,…}` (keys bare, or quoted with `<|"|>`), an array `[value,…]`.

Guarantees: `read_object` reads one `{…}` at a position and returns its value and where it
ended; None when the text runs out before the object closes (more may complete it) and an
`Unreadable` saying why for text that can never be such an object; whitespace between
items is allowed, as llama.cpp's Gemma 4 parser allows it. `gemma_value` writes a value back
in the same syntax (keys bare, sorted, as the template writes a call's arguments).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

QUOTE = '<|"|>'
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_WORDS = {"true": True, "false": False, "null": None}
_KEY_END = ":}"


class _More(Exception):
    """The text ends before the value does."""


class _Unreadable(ValueError):
    """Text that can never become a Gemma 4 value."""


@dataclass(frozen=True)
class Unreadable:
    """Why text can never become a Gemma 4 object."""

    reason: str


def _space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    if at == len(text):
        raise _More
    return at


def _string(text: str, at: int) -> tuple[str, int]:
    """The quoted string whose opening quote is at `at`."""
    start = at + len(QUOTE)
    end = text.find(QUOTE, start)
    if end < 0:
        raise _More
    return text[start:end], end + len(QUOTE)


def _scalar(text: str, at: int) -> tuple[Any, int]:
    for word, value in _WORDS.items():
        if text.startswith(word, at):
            return value, at + len(word)
        if word.startswith(text[at:]):
            raise _More
    found = _NUMBER.match(text, at)
    if found is None:
        raise _Unreadable(f"no value at {text[at : at + 20]!r}")
    if found.end() == len(text):
        raise _More  # the number may go on
    return json.loads(found.group()), found.end()


def _value(text: str, at: int) -> tuple[Any, int]:
    """The value starting at `at` (after any whitespace) and where it ends."""
    at = _space(text, at)
    if text.startswith(QUOTE, at):
        return _string(text, at)
    if QUOTE.startswith(text[at:]) and text[at] == "<":
        raise _More
    if text[at] == "{":
        return _object(text, at)
    if text[at] == "[":
        return _array(text, at)
    return _scalar(text, at)


def _items(text: str, at: int, close: str, item: Any) -> int:
    """Reads `item`s separated by commas up to `close`; where it ends."""
    at = _space(text, at + 1)
    if text[at] == close:
        return at + 1
    while True:
        at = _space(text, item(at))
        if text[at] == close:
            return at + 1
        if text[at] != ",":
            raise _Unreadable(f"expected ',' or {close!r} at {text[at : at + 20]!r}")
        at += 1


def _array(text: str, at: int) -> tuple[list[Any], int]:
    out: list[Any] = []

    def item(i: int) -> int:
        value, end = _value(text, i)
        out.append(value)
        return end

    return out, _items(text, at, "]", item)


def _key(text: str, at: int) -> tuple[str, int]:
    at = _space(text, at)
    if text.startswith(QUOTE, at):
        key, at = _string(text, at)
    else:
        end = at
        while end < len(text) and text[end] not in _KEY_END:
            end += 1
        if end == len(text):
            raise _More
        key, at = text[at:end].strip(), end
        if not key or any(c in key for c in "{[,\n"):
            raise _Unreadable(f"no key at {text[at : at + 20]!r}")
    at = _space(text, at)
    if text[at] != ":":
        raise _Unreadable(f"no ':' after the key {key!r}")
    return key, at + 1


def read_object(text: str, at: int) -> tuple[dict[str, Any], int] | Unreadable | None:
    """The object whose `{` is at `at`, and where it ends (see the module guarantees)."""
    flat = _flat_object(text, at)
    if flat is not None:
        return flat
    try:
        return _object(text, at)
    except _More:
        return None
    except _Unreadable as exc:
        return Unreadable(str(exc))


# one `key:value` of a flat object, the value a string, a number or a word, and what follows
# it (`,` or the closing `}`): what `_object` reads of such an item, read in one match
# (a string's text up to the first closing quote, scanned without backtracking)
_FLAT_ITEM = re.compile(
    r'\s*([A-Za-z_][A-Za-z0-9_.\-]*+)\s*+:\s*+(?:<\|"\|>([^<]*+(?:<(?!\|"\|>)[^<]*+)*+)<\|"\|>'
    r"|(true|false|null)|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?))\s*([,}])",
)
_EMPTY = re.compile(r"\s*\}")


def _flat_object(text: str, at: int) -> tuple[dict[str, Any], int] | None:
    """`_object`'s reading of a whole object of bare keys and scalar values, read item by
    item in one match each; None for any other text (`_object` reads it, or says why not)."""
    empty = _EMPTY.match(text, at + 1)
    if empty is not None:
        return {}, empty.end()
    out: dict[str, Any] = {}
    at += 1
    while (item := _FLAT_ITEM.match(text, at)) is not None:
        key, string, word, number, after = item.groups()
        if string is not None:
            out[key] = string
        elif word is not None:
            out[key] = _WORDS[word]
        else:
            out[key] = float(number) if number.strip("-0123456789") else int(number)
        if after == "}":
            return out, item.end()
        at = item.end()
    return None


def _object(text: str, at: int) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}

    def item(i: int) -> int:
        key, i = _key(text, i)
        out[key], end = _value(text, i)
        return end

    return out, _items(text, at, "}", item)


def gemma_value(value: Any, bare_keys: bool = True) -> str:
    """`value` in Gemma 4's syntax (the template's `format_argument`)."""
    if isinstance(value, str):
        return QUOTE + value + QUOTE
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, dict):
        inner = ",".join(
            f"{k if bare_keys else QUOTE + k + QUOTE}:{gemma_value(v, bare_keys)}"
            for k, v in sorted(value.items())
        )
        return "{" + inner + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(gemma_value(v, bare_keys) for v in value) + "]"
    return json.dumps(value)
