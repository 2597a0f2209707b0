"""The shortest text that finishes a partly written JSON value under a schema.

Guarantees: `closing(partial, schema)` returns the text that, appended to `partial` (compact
JSON mode writes it, cut anywhere), ends the value the way the schema's minimum asks —
the open string, number or literal finished, every required key still missing added with its
smallest value, arrays filled to `minItems`, every open object and array closed — or None when
it cannot tell (a string whose pattern or format it cannot satisfy, a reference it cannot
follow; the smallest values come from `minimal`); `closings` gives the same with other
keys where a key is to be written. The caller checks the result against the grammar before
using it: this is a proposal, never trusted blindly. Each ending is built within one `Budget`
(`minimal.py`): bounded in time and size whatever `minItems` asks, and given up (None) when
the budget runs out or its `stop` says the request was cancelled.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from app.constrain.minimal import (
    Budget,
    dump,
    extra_of,
    items_of,
    merged,
    minimal,
    ordered_required,
    string_for,
)
from app.constrain.regex_sample import Unknown


@dataclass
class _Container:
    kind: str  # "object" or "array"
    schema: Any
    keys: list[str] = field(default_factory=list)  # an object's keys so far
    count: int = 0  # an array's items so far
    expect: str = "first"  # first | key | colon | value | next


class _Cut:
    """A cut compact JSON text read up to its end: the open containers and the open scalar."""

    def __init__(
        self, root: Mapping[str, Any], key_choice: int = 0, budget: Budget | None = None
    ) -> None:
        self.root = root
        self.budget = budget or Budget()
        self.key_choice = key_choice  # which of the keys that fit a cut key (0: the first)
        self.stack: list[_Container] = []
        self.done = False
        self.scalar: str | None = None  # "string", "key", "number", "literal"
        self.buffer = ""
        self.escape = ""  # inside a string: "\\" or "\\u" and its digits
        self.current_key = ""

    def slot(self) -> Any:
        """The schema of the value being written now."""
        if not self.stack:
            return self.root
        top = self.stack[-1]
        schema = merged(top.schema, self.root)
        if top.kind == "array":
            return items_of(schema if isinstance(schema, Mapping) else {}, self.root)(top.count)
        if not isinstance(schema, Mapping):
            return True
        return schema.get("properties", {}).get(self.current_key, extra_of(schema))

    def read(self, text: str) -> None:
        for c in text:
            self._char(c)

    def _char(self, c: str) -> None:
        if self.scalar in ("string", "key"):
            self._in_string(c)
            return
        if self.scalar in ("number", "literal"):
            if c.isalnum() or c in "+-.":
                self.buffer += c
                return
            self._end_value()
        if c in " \t\r\n":
            return
        top = self.stack[-1] if self.stack else None
        if top is None or not self._in_container(top, c):
            self._start_value(c)

    def _in_container(self, top: Any, c: str) -> bool:
        """Read `c` where `top` expects punctuation; False when `c` starts a value instead."""
        if top.kind == "object" and top.expect in ("first", "key"):
            if c == "}":
                self._close()
            elif c == '"':
                self.scalar, self.buffer = "key", ""
            else:
                raise Unknown(f"unexpected {c!r} before a key")
            return True
        if top.expect == "colon":
            if c != ":":
                raise Unknown("expected ':'")
            top.expect = "value"
            return True
        if top.expect == "next":
            if c == ",":
                top.expect = "key" if top.kind == "object" else "value"
            elif c in "}]":
                self._close()
            else:
                raise Unknown(f"unexpected {c!r} after a value")
            return True
        if top.kind == "array" and top.expect == "first" and c == "]":
            self._close()
            return True
        return False

    def _start_value(self, c: str) -> None:
        if self.done:
            raise Unknown("text after the value")
        if c == "{":
            self.stack.append(_Container("object", self.slot()))
        elif c == "[":
            self.stack.append(_Container("array", self.slot()))
        elif c == '"':
            self.scalar, self.buffer = "string", ""
        elif c in "-0123456789":
            self.scalar, self.buffer = "number", c
        elif c in "tfn":
            self.scalar, self.buffer = "literal", c
        else:
            raise Unknown(f"unexpected {c!r}")

    def _in_string(self, c: str) -> None:
        if self.escape:
            self.escape += c
            if self.escape.startswith("\\u") and len(self.escape) < 6:
                return
            self.buffer += "?"  # one character, whatever it was
            self.escape = ""
            return
        if c == "\\":
            self.escape = "\\"
        elif c == '"':
            if self.scalar == "key":
                top = self.stack[-1]
                self.current_key = self.buffer
                top.keys.append(self.buffer)
                top.expect = "colon"
                self.scalar = None
            else:
                self._end_value()
        else:
            self.buffer += c

    def _end_value(self) -> None:
        self.scalar, self.buffer = None, ""
        self._after_value()

    def _after_value(self) -> None:
        if not self.stack:
            self.done = True
            return
        top = self.stack[-1]
        top.count += 1
        top.expect = "next"

    def _close(self) -> None:
        self.stack.pop()
        self._after_value()

    # --- the closing text ---------------------------------------------------------------

    def closing(self) -> str:
        out = self._finish_scalar()
        while self.stack:
            top = self.stack[-1]
            schema = merged(top.schema, self.root)
            schema = schema if isinstance(schema, Mapping) else {}
            if top.kind == "object":
                out += self._finish_object(top, schema)
            else:
                out += self._finish_array(top, schema)
            self.stack.pop()
            if self.stack:
                self.stack[-1].count += 1
                self.stack[-1].expect = "next"
        return out

    def _finish_scalar(self) -> str:
        if self.scalar == "string":
            escape = {"\\": "n"}.get(self.escape, "0" * (6 - len(self.escape)))
            text = escape if self.escape else ""
            slot = merged(self.slot(), self.root)
            slot = slot if isinstance(slot, Mapping) else {}
            if "enum" in slot or "const" in slot:
                options = slot.get("enum", [slot.get("const")])
                fits = [o for o in options if isinstance(o, str) and o.startswith(self.buffer)]
                if not fits or self.escape:
                    raise Unknown("enum")
                chosen, written = min(fits, key=len), len(self.buffer)
                self._end_value()
                return dump(chosen)[1 + written :]
            so_far = self.buffer + ("?" if self.escape else "")  # a finished escape: one char
            whole = string_for(slot, so_far)
            self._end_value()
            return text + dump(whole)[1 + len(so_far) :]
        if self.scalar == "key":
            top = self.stack[-1]
            schema = merged(top.schema, self.root)
            schema = schema if isinstance(schema, Mapping) else {}
            key = self._key_for(top, schema, self.buffer)
            top.keys.append(key)
            self.current_key, self.scalar = key, None
            value = self._min(self.slot())
            top.count += 1
            top.expect = "next"
            return dump(key)[1 + len(self.buffer) :] + ":" + value
        if self.scalar == "number":
            tail = "0" if self.buffer[-1] in "-+.eE" else ""
            self._end_value()
            return tail
        if self.scalar == "literal":
            word = next((w for w in ("true", "false", "null") if w.startswith(self.buffer)), None)
            if word is None:
                raise Unknown("literal")
            self._end_value()
            return word[len(self.buffer) :]
        if self.stack and self.stack[-1].expect == "colon":
            self.stack[-1].expect = "value"
            return ":" + self._value_here()
        if self.stack and self.stack[-1].expect == "value":
            return self._value_here()
        if not self.stack and not self.done:
            return self._min(self.root)
        return ""

    def _min(self, schema: Any) -> str:
        """The smallest value of `schema`, within this ending's budget."""
        return minimal(schema, self.root, budget=self.budget)

    def _value_here(self) -> str:
        value = self._min(self.slot())
        self.stack[-1].count += 1
        self.stack[-1].expect = "next"
        return value

    def _key_for(self, top: _Container, schema: Mapping[str, Any], prefix: str) -> str:
        """The key a cut key becomes: a missing required one first, then any listed one."""
        props = schema.get("properties", {})
        missing = [k for k in ordered_required(schema) if k not in top.keys]
        fits = [k for k in dict.fromkeys([*missing, *map(str, props)]) if k.startswith(prefix)]
        fits = [k for k in fits if k not in top.keys]
        if schema.get("additionalProperties", True) is not False and prefix:
            fits.append(prefix)
        if self.key_choice >= len(fits):
            raise Unknown("no key fits")
        return fits[self.key_choice]

    def _finish_object(self, top: _Container, schema: Mapping[str, Any]) -> str:
        out = ""
        if top.expect == "key":  # after a ',': a key must come
            key = self._key_for(top, schema, "")
            top.keys.append(key)
            self.current_key = key
            out += dump(key) + ":" + self._min(self.slot())
            top.expect = "next"
        for key in ordered_required(schema):
            if key not in top.keys:
                top.keys.append(key)
                self.current_key = key
                sep = "," if top.expect == "next" else ""
                out += f"{sep}{dump(key)}:{self._min(self.slot())}"
                top.expect = "next"
        return out + "}"

    def _finish_array(self, top: _Container, schema: Mapping[str, Any]) -> str:
        out = ""
        items = items_of(schema, self.root)
        if top.expect == "value":  # after a ',': an item must come
            out += self._min(items(top.count))
            top.count += 1
            top.expect = "next"
        self.budget.spend(max(0, int(schema.get("minItems", 0)) - top.count))  # before any item
        while top.count < int(schema.get("minItems", 0)):
            sep = "," if top.count else ""
            out += sep + self._min(items(top.count))
            top.count += 1
        return out + "]"


def _finish(cut: _Cut, key_choice: int) -> str | None:
    """The closing of a copy of `cut` (read already), keys chosen by `key_choice`."""
    copy = _Cut(cut.root, key_choice)
    budget = Budget(stop=cut.budget.stop)  # each ending its own
    copy.__dict__.update(cut.__dict__, key_choice=key_choice, budget=budget)
    copy.stack = [replace(c, keys=list(c.keys)) for c in cut.stack]
    try:
        return copy.closing()
    except (Unknown, ValueError, IndexError, TypeError, KeyError, AttributeError, OverflowError):
        return None


def _read(partial: str, schema: Any, stop: Callable[[], bool] | None = None) -> _Cut | None:
    cut = _Cut(schema if isinstance(schema, Mapping) else {}, budget=Budget(stop=stop))
    try:
        cut.read(partial)
    except (Unknown, ValueError, IndexError, TypeError, KeyError, AttributeError, OverflowError):
        return None
    return cut


def closing(partial: str, schema: Any, key_choice: int = 0) -> str | None:
    """What finishes `partial` under `schema` (see the module guarantees); `key_choice` picks
    another key where a key is to be written (1: the second that fits, …)."""
    cut = _read(partial, schema)
    return None if cut is None else _finish(cut, key_choice)


def closings(
    partial: str, schema: Any, most: int = 4, stop: Callable[[], bool] | None = None
) -> list[str]:
    """Distinct endings, the shortest way first, then with other keys where a key is written
    (the grammar may only allow some of them: the caller tries each). The text is read once;
    `stop` (a cancelled request) ends the search early."""
    cut = _read(partial, schema, stop)
    if cut is None:
        return []
    found = [_finish(cut, k) for k in range(most)]
    return list(dict.fromkeys(f for f in found if f is not None))


__all__ = ["closing", "closings"]
