"""The smallest value text a JSON schema allows, and the schema helpers JSON mode's closing uses.

Guarantees: `minimal(schema)` is the shortest compact JSON the schema asks for — `const`, the
shortest `enum` value, the shortest `anyOf`/`oneOf` alternative (added to what the schema itself
requires), `null`/`false`/the nearest number to 0 within its bounds, a string of `minLength`
(a format's sample, a pattern's shortest match), arrays of `minItems` and objects of their
required keys — with local `$ref`s followed and `allOf` folded; `Unknown` when it cannot tell
(`smallest` then gives None). The caller checks the text against the grammar before using it.
Bounded on any schema: one value's making (a `Budget`, shared by a whole ending when the caller
passes one) builds at most `MAX_BUILT` characters and visits at most `MAX_STEPS` subschemas,
never allocating in proportion to `minItems` or `minLength` — beyond that, or once the budget's
`stop` says so (a cancelled request), it raises `TooLarge` (an `Unknown`: no value proposed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from app.constrain.limits import MAX_BUILT, MAX_DEPTH, MAX_STEPS
from app.constrain.regex_sample import Unknown, matching

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


class TooLarge(Unknown):
    """The value is larger than the closer builds, or the request was cancelled meanwhile."""


@dataclass
class Budget:
    """What one value (or one whole ending) may still cost: characters built and subschemas
    visited; `stop` (a cancelled request) is asked every 256 steps."""

    chars: int = MAX_BUILT
    steps: int = MAX_STEPS
    stop: Callable[[], bool] | None = None

    def spend(self, chars: int, steps: int = 0) -> None:
        """Take `chars` and `steps`; `TooLarge` when either runs out, or on `stop`."""
        self.chars -= chars
        self.steps -= steps
        if self.chars < 0 or self.steps < 0:
            raise TooLarge("the smallest value is larger than JSON mode's closer builds")
        if steps and self.stop is not None and self.steps % 256 == 0 and self.stop():
            raise TooLarge("the request was cancelled")


def _resolve(schema: Any, root: Mapping[str, Any], depth: int = 0) -> Any:
    """`schema` with a local `$ref` followed (and merged with its siblings)."""
    if depth > MAX_DEPTH:
        raise Unknown("reference depth")
    if not isinstance(schema, Mapping) or "$ref" not in schema:
        return schema
    ref = schema["$ref"]
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise Unknown(f"reference {ref!r}")
    target: Any = root
    for part in [p for p in ref[1:].split("/") if p]:
        key = part.replace("~1", "/").replace("~0", "~")
        target = target.get(key) if isinstance(target, Mapping) else None
    if target is None:
        raise Unknown(f"reference {ref!r}")
    siblings = {k: v for k, v in schema.items() if k != "$ref"}
    resolved = _resolve(target, root, depth + 1)
    return {**resolved, **siblings} if isinstance(resolved, Mapping) else resolved


def merged(schema: Any, root: Mapping[str, Any], depth: int = 0) -> Any:
    """`allOf` folded into one schema (shallow: later parts add keys)."""
    if depth > MAX_DEPTH:
        raise Unknown("allOf depth")
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping) or "allOf" not in schema:
        return schema
    out: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in schema["allOf"]:
        part = merged(part, root, depth + 1)
        if isinstance(part, Mapping):
            for key, value in part.items():
                if key == "required":
                    out["required"] = [*out.get("required", []), *value]
                elif key == "properties":
                    out["properties"] = {**out.get("properties", {}), **value}
                else:
                    out.setdefault(key, value)
    return out


def minimal(
    schema: Any, root: Mapping[str, Any] | None = None, depth: int = 0, budget: Budget | None = None
) -> str:
    """The smallest value text the schema allows (raises `Unknown` when it cannot tell, and
    `TooLarge` beyond `budget` — a fresh one when None)."""
    root = root if root is not None else (schema if isinstance(schema, Mapping) else {})
    budget = budget if budget is not None else Budget()
    budget.spend(0, 1)
    if depth > MAX_DEPTH:
        raise Unknown("depth")
    schema = merged(schema, root)
    if schema is True or schema == {}:
        return _spent("0", budget)
    if schema is False or not isinstance(schema, Mapping):
        raise Unknown("no value")
    if "const" in schema:
        return _spent(dump(schema["const"]), budget)
    if schema.get("enum"):
        return _spent(min((dump(v) for v in schema["enum"]), key=len), budget)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return _alternative(schema, key, root, depth, budget)
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else list(kind or [])
    if not kinds:
        kinds = [_implied_type(schema)]
    kinds.sort(key=lambda k: _TYPE_ORDER.index(k) if k in _TYPE_ORDER else 99)
    return _of_type(kinds[0], schema, root, depth, budget)


def _alternative(
    schema: Mapping[str, Any], key: str, root: Mapping[str, Any], depth: int, budget: Budget
) -> str:
    """The shortest of `schema`'s `anyOf`/`oneOf` alternatives (each with the rest of it)."""
    found = []
    for alternative in schema[key]:
        both = {"allOf": [_without(schema, key), _as_map(alternative)]}  # both hold
        try:
            found.append(minimal(both, root, depth + 1, budget))
        except TooLarge:
            raise
        except Unknown:
            continue
    if not found:
        raise Unknown(key)
    return min(found, key=len)


def _spent(text: str, budget: Budget) -> str:
    budget.spend(len(text))
    return text


_IMPLIED = (
    (
        "object",
        ("properties", "required", "additionalProperties", "patternProperties", "minProperties"),
    ),
    ("array", ("items", "prefixItems", "minItems", "maxItems")),
    ("string", ("minLength", "maxLength", "pattern", "format")),
    ("number", ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")),
)


def _implied_type(schema: Mapping[str, Any]) -> str:
    """The type a schema without `type` is written as (its keywords say which), else a number."""
    return next((kind for kind, keys in _IMPLIED if any(k in schema for k in keys)), "integer")


def _without(schema: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != key}


def _as_map(schema: Any) -> dict[str, Any]:
    return dict(schema) if isinstance(schema, Mapping) else {}


def dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _of_type(
    kind: str, schema: Mapping[str, Any], root: Mapping[str, Any], depth: int, budget: Budget
) -> str:
    if kind == "null":
        return _spent("null", budget)
    if kind == "boolean":
        return _spent("false", budget)
    if kind in ("integer", "number"):
        return _spent(_number(schema, kind == "integer"), budget)
    if kind == "string":
        return _spent(dump(string_for(schema, "")), budget)
    if kind == "array":
        count = int(schema.get("minItems", 0))
        budget.spend(count + 1)  # the commas and brackets: checked before any item is made
        items = items_of(schema, root)
        made = (minimal(items(i), root, depth + 1, budget) for i in range(count))
        return "[" + ",".join(made) + "]"
    if kind == "object":
        props = schema.get("properties", {})
        parts = []
        for key in ordered_required(schema):
            budget.spend(len(key) + 4)
            value = minimal(props.get(key, extra_of(schema)), root, depth + 1, budget)
            parts.append(f"{dump(key)}:{value}")
        return "{" + ",".join(parts) + "}"
    raise Unknown(f"type {kind!r}")


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
    return dump(value)


def string_for(schema: Mapping[str, Any], prefix: str) -> str:
    """The shortest string that starts with `prefix` and fits the schema's length and format."""
    if "pattern" in schema:
        if prefix:
            raise Unknown("a cut string under a pattern")
        return matching(str(schema["pattern"]), int(schema.get("minLength", 0)))
    form = schema.get("format")
    if form is not None:
        sample = _FORMAT_SAMPLES.get(str(form))
        if sample is None or not sample.startswith(prefix):
            raise Unknown(f"format {form!r}")
        return sample
    need = int(schema.get("minLength", 0))
    if need > MAX_BUILT:
        raise TooLarge(f"a string of {need} characters")
    return prefix + "a" * max(0, need - len(prefix))


def items_of(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    prefix = schema.get("prefixItems")
    items = schema.get("items", True)

    def item(i: int) -> Any:
        if isinstance(prefix, list) and i < len(prefix):
            return prefix[i]
        if isinstance(items, list):
            return items[i] if i < len(items) else schema.get("additionalItems", True)
        return items

    return item


def extra_of(schema: Mapping[str, Any]) -> Any:
    extra = schema.get("additionalProperties", True)
    return True if extra is False else extra


def ordered_required(schema: Mapping[str, Any]) -> list[str]:
    """Required keys in the order the grammar writes properties (the schema's order first)."""
    required = [k for k in schema.get("required", []) if isinstance(k, str)]
    listed = list(schema.get("properties", {}))
    return [k for k in listed if k in required] + [k for k in required if k not in listed]


# --- reading a cut value ---------------------------------------------------------------------


def smallest(schema: Any, budget: Budget | None = None) -> str | None:
    """The smallest value text of `schema`, or None when it cannot tell (or it is larger than
    `budget`, a fresh one when None, allows)."""
    try:
        return minimal(schema, budget=budget)
    except (Unknown, ValueError, TypeError, KeyError, AttributeError, OverflowError):
        return None


__all__ = [
    "Budget",
    "TooLarge",
    "Unknown",
    "dump",
    "extra_of",
    "items_of",
    "merged",
    "minimal",
    "ordered_required",
    "smallest",
    "string_for",
]
