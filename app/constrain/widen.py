"""The widenings: each keyword the constraint engine cannot enforce is taken out of the
generation schema and listed by JSON pointer, to be checked on the finished answer.

Guarantees: a widening changes the generation schema only in place of what it lists (nothing
is widened silently); `$ref`s into a widened keyword are kept pointing at a copy; the rules run
in one order (`WIDENINGS`; `oneOf` last, so the pointers name the schema as written).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from app.constrain.formats import format_checker
from app.constrain.guidance import engine_reads
from app.constrain.walk import nodes

# Formats llguidance enforces (measured with llguidance 1.9).
ENGINE_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid", "uri"}
)
# Keywords llguidance does not implement: dropped for generation, checked after.
DROPPED = (
    "not",
    "if",
    "then",
    "else",
    "uniqueItems",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "propertyNames",
    "contains",
    "minContains",
    "maxContains",
    "unevaluatedProperties",
    "unevaluatedItems",
)


@dataclass(frozen=True)
class Widened:
    """One keyword the grammar does not enforce."""

    pointer: str  # where, as a JSON pointer ("" is the whole schema)
    keyword: str
    checked: bool = True  # False: a format no checker knows (neither enforced nor checked)

    def said(self) -> str:
        where = self.pointer or "/"
        return f"{self.keyword} at {where}" + ("" if self.checked else " (not checked)")


Widening = Callable[[dict[str, Any], str], list[Widened]]


def drop(keys: tuple[str, ...] | frozenset[str]) -> Widening:
    def widen(node: dict[str, Any], pointer: str) -> list[Widened]:
        gone = [k for k in keys if k in node]
        for key in gone:
            del node[key]
        return [Widened(pointer, key) for key in gone]

    return widen


def _one_of(node: dict[str, Any], pointer: str) -> list[Widened]:
    if "oneOf" not in node:
        return []
    alternatives = node.pop("oneOf")
    if "anyOf" in node:  # both: each stays a condition of its own
        node["allOf"] = [*node.get("allOf", []), {"anyOf": alternatives}]
    else:
        node["anyOf"] = alternatives
    return [Widened(pointer, "oneOf")]


def _formats(node: dict[str, Any], pointer: str) -> list[Widened]:
    form = node.get("format")
    if not isinstance(form, str) or form in ENGINE_FORMATS:
        return []
    del node["format"]
    return [Widened(pointer, f"format {form!r}", checked=form in format_checker().checkers)]


def _open_counts(node: dict[str, Any], pointer: str) -> list[Widened]:
    counts = [k for k in ("minProperties", "maxProperties") if k in node]
    listed = node.get("properties")
    listed_required = node.get("required")
    required = set(listed_required) if isinstance(listed_required, list) else set()
    if not counts or (isinstance(listed, Mapping) and set(listed) <= required):
        return []
    for key in counts:
        del node[key]
    return [Widened(pointer, key) for key in counts]


def patterns(node: dict[str, Any], pointer: str) -> list[Widened]:
    pattern = node.get("pattern")
    if not isinstance(pattern, str) or engine_reads(pattern):
        return []
    del node["pattern"]
    return [Widened(pointer, "pattern")]


def pattern_properties(node: dict[str, Any], pointer: str) -> list[Widened]:
    """Pattern properties the engine cannot take (a regular expression it cannot read, or
    patterns that overlap): their schemas join what any other property may be."""
    patterns = node.get("patternProperties")
    if not isinstance(patterns, Mapping) or not patterns:
        return []
    other = node.get("additionalProperties", True)
    alternatives = [s for s in (other, *patterns.values()) if s is not False]
    del node["patternProperties"]
    node["additionalProperties"] = {"anyOf": alternatives} if alternatives else False
    return [Widened(pointer, "patternProperties")]


def _huge_bounds(node: dict[str, Any], pointer: str) -> list[Widened]:
    """Numeric bounds too large for the engine's number ranges (1e15 and beyond)."""
    keys = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
    huge = [k for k in keys if _is_number(node.get(k)) and abs(node[k]) >= 1e15]
    for key in huge:
        del node[key]
    return [Widened(pointer, key) for key in huge]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def keep_ref_targets(schema: dict[str, Any]) -> None:
    """A `$ref` into a keyword that widening drops (`#/…/if`) points at a copy instead."""
    widened = {*DROPPED, "oneOf", "patternProperties"}
    kept: dict[str, Any] = {}
    for node, _ in list(nodes(schema, "")):
        ref = node.get("$ref")
        if not (isinstance(ref, str) and ref.startswith("#/")):
            continue
        parts = [p.replace("~1", "/").replace("~0", "~") for p in ref[2:].split("/")]
        if not widened & set(parts):
            continue
        target: Any = schema
        for part in parts:
            target = target.get(part) if isinstance(target, Mapping) else None
        if isinstance(target, Mapping | bool):
            name = f"harmony-desk-{len(kept)}"
            kept[name] = copy.deepcopy(target)
            node["$ref"] = f"#/$defs/{name}"
    if kept:
        schema["$defs"] = {**schema.get("$defs", {}), **kept}


def apply(schema: dict[str, Any], widening: Widening) -> list[Widened]:
    """Apply `widening` to every subschema of `schema` (in place); what it widened."""
    out: list[Widened] = []
    for node, pointer in list(nodes(schema, "")):
        out += widening(node, pointer)
    return out


WIDENINGS: tuple[Widening, ...] = (  # `oneOf` last: the pointers name the schema as written
    _formats,
    drop(DROPPED),
    _open_counts,
    _huge_bounds,
    _one_of,
)
