"""The shortest text that finishes a partly written JSON value under a schema.

Guarantees: `closing(partial, schema)` returns the text that, appended to `partial` (compact
JSON as JSON mode writes it, cut anywhere), ends the value the way the schema's minimum asks —
the open string, number or literal finished, every required key still missing added with its
smallest value, arrays filled to `minItems`, every open object and array closed — or None when
it cannot tell (a string whose pattern or format it cannot satisfy, a reference it cannot
follow); `minimal(schema)` is the smallest value text of a schema. The caller checks the
result against the grammar before using it: this is a proposal, never trusted blindly.
"""

from __future__ import annotations

import json
import re._parser as _re_parser  # type: ignore[import-not-found]
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_FORMAT_SAMPLES = {
    "date": "2000-01-01",
    "date-time": "2000-01-01T00:00:00Z",
    "time": "00:00:00Z",
    "duration": "P0D",
    "email": "a@b.co",
    "hostname": "a",
    "ipv4": "0.0.0.0",
    "ipv6": "::",
    "uuid": "00000000-0000-0000-0000-000000000000",
    "uri": "a:b",
}
_TYPE_ORDER = ("null", "boolean", "integer", "number", "string", "array", "object")
MAX_DEPTH = 24


class _Unknown(Exception):
    """The schema asks for something this module cannot make."""


def _resolve(schema: Any, root: Mapping[str, Any], depth: int = 0) -> Any:
    """`schema` with a local `$ref` followed (and merged with its siblings)."""
    if depth > MAX_DEPTH:
        raise _Unknown("reference depth")
    if not isinstance(schema, Mapping) or "$ref" not in schema:
        return schema
    ref = schema["$ref"]
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise _Unknown(f"reference {ref!r}")
    target: Any = root
    for part in [p for p in ref[1:].split("/") if p]:
        key = part.replace("~1", "/").replace("~0", "~")
        target = target.get(key) if isinstance(target, Mapping) else None
    if target is None:
        raise _Unknown(f"reference {ref!r}")
    siblings = {k: v for k, v in schema.items() if k != "$ref"}
    resolved = _resolve(target, root, depth + 1)
    return {**resolved, **siblings} if isinstance(resolved, Mapping) else resolved


def _merged(schema: Any, root: Mapping[str, Any]) -> Any:
    """`allOf` folded into one schema (shallow: later parts add keys)."""
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping) or "allOf" not in schema:
        return schema
    out: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in schema["allOf"]:
        part = _merged(part, root)
        if isinstance(part, Mapping):
            for key, value in part.items():
                if key == "required":
                    out["required"] = [*out.get("required", []), *value]
                elif key == "properties":
                    out["properties"] = {**out.get("properties", {}), **value}
                else:
                    out.setdefault(key, value)
    return out


def minimal(schema: Any, root: Mapping[str, Any] | None = None, depth: int = 0) -> str:
    """The smallest value text the schema allows (raises `_Unknown` when it cannot tell)."""
    root = root if root is not None else (schema if isinstance(schema, Mapping) else {})
    if depth > MAX_DEPTH:
        raise _Unknown("depth")
    schema = _merged(schema, root)
    if schema is True or schema == {}:
        return "0"
    if schema is False or not isinstance(schema, Mapping):
        raise _Unknown("no value")
    if "const" in schema:
        return _dump(schema["const"])
    if schema.get("enum"):
        return min((_dump(v) for v in schema["enum"]), key=len)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            found = []
            for alternative in schema[key]:
                both = {"allOf": [_without(schema, key), _as_map(alternative)]}  # both hold
                try:
                    found.append(minimal(both, root, depth + 1))
                except _Unknown:
                    continue
            if not found:
                raise _Unknown(key)
            return min(found, key=len)
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else list(kind or [])
    if not kinds:
        kinds = [_implied_type(schema)]
    kinds.sort(key=lambda k: _TYPE_ORDER.index(k) if k in _TYPE_ORDER else 99)
    return _of_type(kinds[0], schema, root, depth)


_IMPLIED = (
    ("object", ("properties", "required", "additionalProperties", "patternProperties",
                "minProperties")),
    ("array", ("items", "prefixItems", "minItems", "maxItems")),
    ("string", ("minLength", "maxLength", "pattern", "format")),
    ("number", ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")),
)  # fmt: skip


def _implied_type(schema: Mapping[str, Any]) -> str:
    """The type a schema without `type` is written as (its keywords say which), else a number."""
    return next((kind for kind, keys in _IMPLIED if any(k in schema for k in keys)), "integer")


def _without(schema: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != key}


def _as_map(schema: Any) -> dict[str, Any]:
    return dict(schema) if isinstance(schema, Mapping) else {}


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _of_type(kind: str, schema: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> str:
    if kind == "null":
        return "null"
    if kind == "boolean":
        return "false"
    if kind in ("integer", "number"):
        return _number(schema, kind == "integer")
    if kind == "string":
        return _dump(_string(schema, ""))
    if kind == "array":
        count = int(schema.get("minItems", 0))
        items = _items(schema, root)
        return "[" + ",".join(minimal(items(i), root, depth + 1) for i in range(count)) + "]"
    if kind == "object":
        props = schema.get("properties", {})
        parts = [
            f"{_dump(key)}:{minimal(props.get(key, _extra(schema)), root, depth + 1)}"
            for key in _ordered_required(schema)
        ]
        return "{" + ",".join(parts) + "}"
    raise _Unknown(f"type {kind!r}")


def _number(schema: Mapping[str, Any], integer: bool) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    ex_low, ex_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    value: float = 0
    if isinstance(low, int | float) and value < low:
        value = low
    if isinstance(ex_low, int | float) and value <= ex_low:
        value = ex_low + 1
    if isinstance(high, int | float) and value > high:
        value = high
    if isinstance(ex_high, int | float) and value >= ex_high:
        value = ex_high - 1
    if integer or float(value).is_integer():
        return str(int(value)) if float(value).is_integer() else str(int(value) + 1)
    return _dump(value)


def _string(schema: Mapping[str, Any], prefix: str) -> str:
    """The shortest string that starts with `prefix` and fits the schema's length and format."""
    if "pattern" in schema:
        if prefix:
            raise _Unknown("a cut string under a pattern")
        return _matching(str(schema["pattern"]), int(schema.get("minLength", 0)))
    form = schema.get("format")
    if form is not None:
        sample = _FORMAT_SAMPLES.get(str(form))
        if sample is None or not sample.startswith(prefix):
            raise _Unknown(f"format {form!r}")
        return sample
    need = int(schema.get("minLength", 0))
    return prefix + "a" * max(0, need - len(prefix))


def _matching(pattern: str, least: int) -> str:
    """A short string the pattern matches (its smallest match, padded to `least` with what the
    pattern accepts), or `_Unknown`."""
    import re

    try:
        parsed = _re_parser.parse(pattern)
        text = _shortest(list(parsed))
    except (re.error, _Unknown, ValueError, TypeError, IndexError, OverflowError) as exc:
        raise _Unknown(f"pattern {pattern!r}") from exc
    for pad in ("", "a" * max(0, least - len(text)), "0" * max(0, least - len(text))):
        for candidate in (text + pad, pad + text):
            if len(candidate) >= least and re.search(pattern, candidate):
                return candidate
    raise _Unknown(f"pattern {pattern!r}")


def _shortest(items: list[Any]) -> str:
    """The shortest text a parsed regular expression (`re._parser`) matches."""
    out = ""
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            out += chr(arg)
        elif name == "NOT_LITERAL":
            out += "a" if chr(arg) != "a" else "b"
        elif name == "ANY":
            out += "a"
        elif name == "IN":
            out += _in_class(arg)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _, sub = arg
            out += _shortest(list(sub)) * low
        elif name == "SUBPATTERN":
            out += _shortest(list(arg[-1]))
        elif name == "ATOMIC_GROUP":
            out += _shortest(list(arg))
        elif name == "BRANCH":
            out += min((_shortest(list(b)) for b in arg[1]), key=len)
        elif name == "AT":
            continue
        else:
            raise _Unknown(f"regex {name}")
    return out


def _in_class(items: list[Any]) -> str:
    """A character a class accepts."""
    names = [str(op) for op, _ in items]
    if "NEGATE" in names:
        banned = {chr(a) for op, a in items if str(op) == "LITERAL"}
        for op, a in items:
            if str(op) == "RANGE":
                banned |= {chr(c) for c in range(a[0], min(a[1], a[0] + 200) + 1)}
        return next(c for c in "aA0b_-" if c not in banned)
    op, arg = items[0]
    name = str(op)
    if name == "LITERAL":
        return chr(arg)
    if name == "RANGE":
        return chr(arg[0])
    if name == "CATEGORY":
        return {"CATEGORY_DIGIT": "0", "CATEGORY_SPACE": " "}.get(str(arg), "a")
    raise _Unknown(f"class {name}")


def _items(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    prefix = schema.get("prefixItems")
    items = schema.get("items", True)

    def item(i: int) -> Any:
        if isinstance(prefix, list) and i < len(prefix):
            return prefix[i]
        if isinstance(items, list):
            return items[i] if i < len(items) else schema.get("additionalItems", True)
        return items

    return item


def _extra(schema: Mapping[str, Any]) -> Any:
    extra = schema.get("additionalProperties", True)
    return True if extra is False else extra


def _ordered_required(schema: Mapping[str, Any]) -> list[str]:
    """Required keys in the order the grammar writes properties (the schema's order first)."""
    required = [k for k in schema.get("required", []) if isinstance(k, str)]
    listed = list(schema.get("properties", {}))
    return [k for k in listed if k in required] + [k for k in required if k not in listed]


# --- reading a cut value ---------------------------------------------------------------------


@dataclass
class _Container:
    kind: str  # "object" or "array"
    schema: Any
    keys: list[str] = field(default_factory=list)  # an object's keys so far
    count: int = 0  # an array's items so far
    expect: str = "first"  # first | key | colon | value | next


class _Cut:
    """A cut compact JSON text read up to its end: the open containers and the open scalar."""

    def __init__(self, root: Mapping[str, Any], key_choice: int = 0) -> None:
        self.root = root
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
        schema = _merged(top.schema, self.root)
        if top.kind == "array":
            return _items(schema if isinstance(schema, Mapping) else {}, self.root)(top.count)
        if not isinstance(schema, Mapping):
            return True
        return schema.get("properties", {}).get(self.current_key, _extra(schema))

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
        if top is not None and top.kind == "object" and top.expect in ("first", "key"):
            if c == "}":
                self._close()
            elif c == '"':
                self.scalar, self.buffer = "key", ""
            else:
                raise _Unknown(f"unexpected {c!r} before a key")
            return
        if top is not None and top.expect == "colon":
            if c != ":":
                raise _Unknown("expected ':'")
            top.expect = "value"
            return
        if top is not None and top.expect == "next":
            if c == ",":
                top.expect = "key" if top.kind == "object" else "value"
            elif c in "}]":
                self._close()
            else:
                raise _Unknown(f"unexpected {c!r} after a value")
            return
        if top is not None and top.kind == "array" and top.expect == "first" and c == "]":
            self._close()
            return
        self._start_value(c)

    def _start_value(self, c: str) -> None:
        if self.done:
            raise _Unknown("text after the value")
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
            raise _Unknown(f"unexpected {c!r}")

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
            schema = _merged(top.schema, self.root)
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
            slot = _merged(self.slot(), self.root)
            slot = slot if isinstance(slot, Mapping) else {}
            if "enum" in slot or "const" in slot:
                options = slot.get("enum", [slot.get("const")])
                fits = [o for o in options if isinstance(o, str) and o.startswith(self.buffer)]
                if not fits or self.escape:
                    raise _Unknown("enum")
                chosen, written = min(fits, key=len), len(self.buffer)
                self._end_value()
                return _dump(chosen)[1 + written :]
            so_far = self.buffer + ("?" if self.escape else "")  # a finished escape: one char
            whole = _string(slot, so_far)
            self._end_value()
            return text + _dump(whole)[1 + len(so_far) :]
        if self.scalar == "key":
            top = self.stack[-1]
            schema = _merged(top.schema, self.root)
            schema = schema if isinstance(schema, Mapping) else {}
            key = self._key_for(top, schema, self.buffer)
            top.keys.append(key)
            self.current_key, self.scalar = key, None
            value = minimal(self.slot(), self.root)
            top.count += 1
            top.expect = "next"
            return _dump(key)[1 + len(self.buffer) :] + ":" + value
        if self.scalar == "number":
            tail = "0" if self.buffer[-1] in "-+.eE" else ""
            self._end_value()
            return tail
        if self.scalar == "literal":
            word = next((w for w in ("true", "false", "null") if w.startswith(self.buffer)), None)
            if word is None:
                raise _Unknown("literal")
            self._end_value()
            return word[len(self.buffer) :]
        if self.stack and self.stack[-1].expect == "colon":
            self.stack[-1].expect = "value"
            return ":" + self._value_here()
        if self.stack and self.stack[-1].expect == "value":
            return self._value_here()
        if not self.stack and not self.done:
            return minimal(self.root, self.root)
        return ""

    def _value_here(self) -> str:
        value = minimal(self.slot(), self.root)
        self.stack[-1].count += 1
        self.stack[-1].expect = "next"
        return value

    def _key_for(self, top: _Container, schema: Mapping[str, Any], prefix: str) -> str:
        """The key a cut key becomes: a missing required one first, then any listed one."""
        props = schema.get("properties", {})
        missing = [k for k in _ordered_required(schema) if k not in top.keys]
        fits = [k for k in dict.fromkeys([*missing, *map(str, props)]) if k.startswith(prefix)]
        fits = [k for k in fits if k not in top.keys]
        if schema.get("additionalProperties", True) is not False and prefix:
            fits.append(prefix)
        if self.key_choice >= len(fits):
            raise _Unknown("no key fits")
        return fits[self.key_choice]

    def _finish_object(self, top: _Container, schema: Mapping[str, Any]) -> str:
        out = ""
        if top.expect == "key":  # after a ',': a key must come
            key = self._key_for(top, schema, "")
            top.keys.append(key)
            self.current_key = key
            out += _dump(key) + ":" + minimal(self.slot(), self.root)
            top.expect = "next"
        for key in _ordered_required(schema):
            if key not in top.keys:
                top.keys.append(key)
                self.current_key = key
                sep = "," if top.expect == "next" else ""
                out += f"{sep}{_dump(key)}:{minimal(self.slot(), self.root)}"
                top.expect = "next"
        return out + "}"

    def _finish_array(self, top: _Container, schema: Mapping[str, Any]) -> str:
        out = ""
        items = _items(schema, self.root)
        if top.expect == "value":  # after a ',': an item must come
            out += minimal(items(top.count), self.root)
            top.count += 1
            top.expect = "next"
        while top.count < int(schema.get("minItems", 0)):
            sep = "," if top.count else ""
            out += sep + minimal(items(top.count), self.root)
            top.count += 1
        return out + "]"


def closing(partial: str, schema: Any, key_choice: int = 0) -> str | None:
    """What finishes `partial` under `schema` (see the module guarantees); `key_choice` picks
    another key where a key is to be written (1: the second that fits, …)."""
    root = schema if isinstance(schema, Mapping) else {}
    cut = _Cut(root, key_choice)
    try:
        cut.read(partial)
        return cut.closing()
    except (_Unknown, ValueError, IndexError, TypeError, KeyError, AttributeError):
        return None


def closings(partial: str, schema: Any, most: int = 4) -> list[str]:
    """Distinct endings, the shortest way first, then with other keys where a key is written
    (the grammar may only allow some of them: the caller tries each)."""
    found = [closing(partial, schema, k) for k in range(most)]
    return list(dict.fromkeys(f for f in found if f is not None))


def smallest(schema: Any) -> str | None:
    """The smallest value text of `schema`, or None when it cannot tell."""
    try:
        return minimal(schema)
    except (_Unknown, ValueError, TypeError, KeyError, AttributeError):
        return None


__all__ = ["closing", "closings", "minimal", "smallest"]
