"""Whether a recursive schema has any value a model could finish writing.

Guarantees: `unfinishable(schema)` is "" unless every value the schema allows would have to hold
another value of the same definition without end (a node that requires a node) — then it says
which definitions never end. It never reports a schema that has a finite value: where it cannot
tell (a keyword it does not weigh, a reference it does not follow) it assumes a value can end.
Definitions are weighed together to a fixed point (at most one round per definition), on the
schema's local `$defs` / `definitions`; nothing is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_FINITE_TYPES = frozenset({"null", "boolean", "integer", "number", "string"})


def unfinishable(schema: Mapping[str, Any]) -> str:
    """Why no value of `schema` can end ("" when one can; see the module guarantees)."""
    defs = {
        f"#/{key}/{name}": body
        for key in ("$defs", "definitions")
        if isinstance(schema.get(key), Mapping)
        for name, body in schema[key].items()
    }
    if not defs:
        return ""
    ends = {ref: False for ref in defs}
    for _ in range(len(defs) + 1):
        now = {ref: _Weigh(ends).ends(body) for ref, body in defs.items()}
        if now == ends:
            break
        ends = now
    if _Weigh(ends).ends(schema):
        return ""
    never = ", ".join(ref for ref, done in ends.items() if not done)
    return f"every value must hold another without end, through {never}"


class _Weigh:
    """One round: which definitions are known to end so far."""

    def __init__(self, ends: Mapping[str, bool]) -> None:
        self.known = ends

    def ends(self, node: Any) -> bool:
        if node is False:
            return False
        if not isinstance(node, Mapping):
            return True
        ref = node.get("$ref")
        if isinstance(ref, str) and not self.known.get(ref, True):
            return False
        parts = node.get("allOf")
        if isinstance(parts, list) and not all(self.ends(p) for p in parts):
            return False
        for key in ("anyOf", "oneOf"):
            options = node.get(key)
            if isinstance(options, list) and options and not any(self.ends(o) for o in options):
                return False
        if "const" in node or "enum" in node:
            return True
        return self._typed(node)

    def _typed(self, node: Mapping[str, Any]) -> bool:
        kind = node.get("type")
        kinds = {kind} if isinstance(kind, str) else set(kind) if isinstance(kind, list) else set()
        if not kinds or kinds & _FINITE_TYPES:
            return True  # a scalar may be the value
        return ("object" in kinds and self._object(node)) or (
            "array" in kinds and self._array(node)
        )

    def _object(self, node: Mapping[str, Any]) -> bool:
        properties = node.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        other = node.get("additionalProperties", True)
        required = node.get("required")
        names = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
        return all(self.ends(properties.get(name, other)) for name in names)

    def _array(self, node: Mapping[str, Any]) -> bool:
        least = node.get("minItems", 0)
        if not isinstance(least, int) or least <= 0:
            return True
        items = node.get("items", True)
        prefix = node.get("prefixItems", [])
        if isinstance(items, list):  # draft 4 to 2019-09: the list is the prefix
            prefix, items = items, node.get("additionalItems", True)
        prefix = prefix if isinstance(prefix, list) else []
        if not all(self.ends(p) for p in prefix[:least]):
            return False
        return least <= len(prefix) or self.ends(items)


__all__ = ["unfinishable"]
