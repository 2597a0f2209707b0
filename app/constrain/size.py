"""How long the smallest answer of a schema is at least, and the schemas too large to answer.

Guarantees:
- `least_chars(schema)` never overestimates the length of the shortest compact JSON the schema
  allows, and never builds a value: it counts — `minItems` items (each `prefixItems` item,
  the rest as often as `items` needs, worked out once), required keys with their values,
  `minProperties` members, `minLength` (or a pattern's least width), `const` and the shortest
  `enum` value; `allOf` its largest part, `anyOf`/`oneOf` its smallest alternative, a type
  list its smallest type, local `$ref`s followed. It visits at most `MAX_STEPS` subschemas and
  `MAX_DEPTH` levels; what it does not reach counts 0 (so it is fast on any schema, and still
  a lower bound). A schema that names no type may be a number: it counts 1.
- `refuse_absurd(schema)` raises `SchemaError` for a count keyword (`minItems`, `maxLength`,
  …) above `MAX_COUNT` anywhere in the schema, or a smallest answer above `MAX_ANSWER_CHARS`,
  naming the keyword and where.
- `refuse_over_budget(schema, max_tokens)` raises `SchemaError` when the smallest answer
  needs more than `max_tokens` tokens, at `CHARS_PER_TOKEN` characters a token at most.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from app.constrain.limits import (
    CHARS_PER_TOKEN,
    COUNT_KEYWORDS,
    MAX_ANSWER_CHARS,
    MAX_COUNT,
    MAX_DEPTH,
    MAX_STEPS,
)
from app.constrain.regex_sample import least_width
from app.constrain.walk import nodes
from app.errors import SchemaError

_FIXED = {"null": 4, "boolean": 4, "integer": 1, "number": 1}
_HINT = "lower minItems, minLength or minProperties, or require fewer properties"


def refuse_absurd(schema: Mapping[str, Any]) -> None:
    """Refuse absurd counts and a smallest answer beyond `MAX_ANSWER_CHARS` (see above)."""
    for node, pointer in nodes(dict(schema), ""):
        for key in COUNT_KEYWORDS:
            value = node.get(key)
            if isinstance(value, int | float) and value > MAX_COUNT:
                raise SchemaError(
                    f"the schema asks for {key} {value:,.0f} at {pointer or '(top level)'}; JSON"
                    f" mode takes at most {MAX_COUNT:,}"
                )
    least = least_chars(schema)
    if least > MAX_ANSWER_CHARS:
        raise SchemaError(
            f"the smallest answer the schema allows is at least {least:,} characters; JSON mode"
            f" takes at most {MAX_ANSWER_CHARS:,} — {_HINT}"
        )


def refuse_over_budget(schema: Mapping[str, Any], max_tokens: int) -> None:
    """Refuse a schema whose smallest answer cannot fit in `max_tokens` tokens."""
    least = least_chars(schema)
    tokens = -(-least // CHARS_PER_TOKEN)
    if tokens > max_tokens:
        raise SchemaError(
            f"the smallest answer the schema allows is at least {least:,} characters (at least"
            f" {tokens:,} tokens), more than max_tokens {max_tokens:,} — raise max_tokens or"
            f" {_HINT}"
        )


def least_chars(schema: Any) -> int:
    """A lower bound of the smallest answer's length in characters (see above)."""
    root = schema if isinstance(schema, Mapping) else {}
    return _Bound(root).of(schema, 0)


class _Bound:
    """One bound's walk: the root `$ref`s point into, and the subschemas left to visit."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.steps = MAX_STEPS

    def of(self, schema: Any, depth: int) -> int:
        self.steps -= 1
        if schema is True:
            return 1
        if not isinstance(schema, Mapping) or depth > MAX_DEPTH or self.steps < 0:
            return 0
        parts = [self._own(schema, depth)]
        ref = schema.get("$ref")
        if isinstance(ref, str):
            parts.append(self.of(self._target(ref), depth + 1))
        for part in _list(schema.get("allOf")):
            parts.append(self.of(part, depth + 1))
        for key in ("anyOf", "oneOf"):
            alternatives = _list(schema.get(key))
            if alternatives:
                parts.append(min(self.of(a, depth + 1) for a in alternatives))
        return max(parts)

    def _target(self, ref: str) -> Any:
        if not ref.startswith("#"):
            return None
        target: Any = self.root
        for part in [p for p in ref[1:].split("/") if p]:
            key = part.replace("~1", "/").replace("~0", "~")
            target = target.get(key) if isinstance(target, Mapping) else None
        return target

    def _own(self, schema: Mapping[str, Any], depth: int) -> int:
        """The bound from the schema's own keywords (its subschemas in combinators apart)."""
        if "const" in schema:
            return len(_dump(schema["const"]))
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return min(len(_dump(v)) for v in schema["enum"])
        kind = schema.get("type")
        kinds = [kind] if isinstance(kind, str) else [k for k in _list(kind) if isinstance(k, str)]
        if not kinds:
            return 1  # any type: a number may be the answer
        return min(self._of_type(k, schema, depth) for k in kinds)

    def _of_type(self, kind: str, schema: Mapping[str, Any], depth: int) -> int:
        if kind == "string":
            return 2 + max(_count(schema, "minLength"), _pattern_width(schema.get("pattern")))
        if kind == "array":
            return self._array(schema, depth)
        if kind == "object":
            return self._object(schema, depth)
        return _FIXED.get(kind, 0)

    def _array(self, schema: Mapping[str, Any], depth: int) -> int:
        count = _count(schema, "minItems")
        if not count:
            return 2
        prefix = _list(schema.get("prefixItems"))
        items = schema.get("items", True)
        if isinstance(items, list):  # draft 4 to 2019-09: the list is the prefix
            prefix, items = items, schema.get("additionalItems", True)
        head = sum(self.of(p, depth + 1) for p in prefix[:count])
        rest = max(0, count - len(prefix))
        return 2 + (count - 1) + head + (rest * self.of(items, depth + 1) if rest else 0)

    def _object(self, schema: Mapping[str, Any], depth: int) -> int:
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        extra = schema.get("additionalProperties", True)
        required = list(
            dict.fromkeys(k for k in _list(schema.get("required")) if isinstance(k, str))
        )
        members = [len(_dump(k)) + 1 + self.of(props.get(k, extra), depth + 1) for k in required]
        more = max(0, _count(schema, "minProperties") - len(required))
        count = len(members) + more
        return 2 + max(0, count - 1) + sum(members) + 4 * more  # '"":0' at least per member


def _count(schema: Mapping[str, Any], key: str) -> int:
    value = schema.get(key, 0)
    return int(value) if isinstance(value, int | float) and 0 < value < float("inf") else 0


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _pattern_width(pattern: Any) -> int:
    return least_width(pattern) if isinstance(pattern, str) else 0


__all__ = ["least_chars", "refuse_absurd", "refuse_over_budget"]
