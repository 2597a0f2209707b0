"""Where each value of a JSON text is, and where JSON mode backs up to retry a broken one.

Guarantees: `spans(text)` gives, for every value of a valid JSON text, its JSON pointer and
its (start, end) character offsets (`""` is the whole text); `backup_offset` is the offset
from which a regenerated answer can repair a violation of `keyword` at `path`: where the
offending value's own choice begins (after a string's opening quote, which the grammar writes
anyway), the later of two equal items for `uniqueItems`, or the closing bracket of the
container for keywords a longer container satisfies (`required`, `minItems`, …); asked
`wider` (retries at the value did not repair it), the offending member or item itself is taken
back — from the comma before it, or from its own start when it comes first — so that the
answer may leave it out; None when the text is not JSON or the place is not in it.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_SPACE = re.compile(r"[ \t\n\r]*")
_LITERALS = ("true", "false", "null")
# Broken by a container that is too short: adding to it (before its end) is the repair.
GROW = frozenset(
    {
        "required",
        "dependentRequired",
        "dependencies",
        "minProperties",
        "minItems",
        "contains",
        "minContains",
    }
)


class _Spans:
    def __init__(self, text: str) -> None:
        self.text = text
        self.out: dict[str, tuple[int, int]] = {}
        self.members: dict[str, int] = {}  # an object member's pointer → its key's quote

    def skip(self, i: int) -> int:
        m = _SPACE.match(self.text, i)
        return m.end() if m else i

    def value(self, i: int, pointer: str) -> int:
        i = self.skip(i)
        text, start = self.text, i
        if i >= len(text):
            raise ValueError("the text ends before a value")
        c = text[i]
        if c == "{":
            i = self._object(i + 1, pointer)
        elif c == "[":
            i = self._array(i + 1, pointer)
        elif c == '"':
            _, i = scanstring(text, i + 1)
        else:
            literal = next((w for w in _LITERALS if text.startswith(w, i)), None)
            m = None if literal else _NUMBER.match(text, i)
            if literal is None and m is None:
                raise ValueError(f"no JSON value at {i}")
            i = i + len(literal) if literal else m.end()  # type: ignore[union-attr]
        self.out[pointer] = (start, i)
        return i

    def _object(self, i: int, pointer: str) -> int:
        i = self.skip(i)
        if self.text.startswith("}", i):
            return i + 1
        while True:
            i = self.skip(i)
            if not self.text.startswith('"', i):
                raise ValueError(f"no key at {i}")
            member = i
            key, i = scanstring(self.text, i + 1)
            i = self.skip(i)
            if not self.text.startswith(":", i):
                raise ValueError(f"no ':' at {i}")
            self.members[f"{pointer}/{_escape(key)}"] = member
            i = self.skip(self.value(i + 1, f"{pointer}/{_escape(key)}"))
            if self.text.startswith("}", i):
                return i + 1
            if not self.text.startswith(",", i):
                raise ValueError(f"no ',' at {i}")
            i += 1

    def _array(self, i: int, pointer: str) -> int:
        i = self.skip(i)
        if self.text.startswith("]", i):
            return i + 1
        n = 0
        while True:
            i = self.skip(self.value(i, f"{pointer}/{n}"))
            n += 1
            if self.text.startswith("]", i):
                return i + 1
            if not self.text.startswith(",", i):
                raise ValueError(f"no ',' at {i}")
            i += 1


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _read(text: str) -> _Spans:
    found = _Spans(text)
    end = found.skip(found.value(0, ""))
    if end != len(text):
        raise ValueError(f"text after the JSON value at {end}")
    return found


def spans(text: str) -> dict[str, tuple[int, int]]:
    """Every value's pointer → (start, end); ValueError when `text` is not one JSON value."""
    return _read(text).out


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def backup_offset(
    text: str, value: Any, path: str, keyword: str, wider: bool = False
) -> int | None:
    """Where to regenerate from to repair `keyword` at `path` (see the module guarantees);
    `wider` (retries at the value did not repair it): the member itself is taken back, from
    the separator before it."""
    try:
        found = _read(text)
    except ValueError:
        return None
    where = found.out
    pointer = "" if path in ("", "/") else path
    if pointer not in where:
        return None
    if keyword in GROW:
        return where[pointer][1] - 1  # before the closing brace or bracket
    if keyword == "uniqueItems":
        items = _at(value, pointer)
        seen: set[str] = set()
        duplicate = None
        for n, item in enumerate(items if isinstance(items, list) else []):
            if _canonical(item) in seen:
                duplicate = f"{pointer}/{n}"
                break
            seen.add(_canonical(item))
        if duplicate is None:
            return None
        pointer = duplicate
    start = where[pointer][0]
    if wider and pointer:
        member = found.members.get(pointer, start)  # an object member starts at its key
        before = text[:member].rstrip(" \t\n\r")
        return len(before) - 1 if before.endswith(",") else member
    return _content(text, start)


def _content(text: str, start: int) -> int:
    """Where a value's own choice begins: after a string's opening quote (the quote is the
    grammar's, not the model's choice), else at its first character."""
    return start + 1 if text.startswith('"', start) else start


def _at(value: Any, pointer: str) -> Any:
    for part in pointer.split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


__all__ = ["GROW", "backup_offset", "spans"]
