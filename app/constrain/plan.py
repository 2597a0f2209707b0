"""JSON mode's plan for one schema: what the token mask enforces, and what is checked after.

Guarantees:
- `plan(schema)` first checks the schema against its meta-schema; a schema that is not valid
  JSON Schema, points at a definition that is not there, or references a remote document is a
  `SchemaError` with the reason (JSON mode reads nothing from the network).
- Every keyword the constraint engine (llguidance) cannot enforce is widened for generation
  and listed by JSON pointer: `oneOf` becomes `anyOf`; a format the engine does not know is
  dropped; `not`, `uniqueItems`, `if`/`then`/`else`, `dependencies`, `dependentRequired`,
  `dependentSchemas`, `propertyNames`, `contains`, `unevaluated*`, `min`/`maxProperties` over
  optional keys, and a `pattern` the engine's regular expressions cannot read are dropped. A
  schema the engine still cannot take is generated as the bare type it names, the whole of it
  checked after (said, with the engine's reason).
- Nothing is silently widened: what the grammar lost is exactly what `check` verifies on the
  answer — the original schema, with `jsonschema` and format checking on (a format no checker
  knows is listed as "not checked").
- A schema that asks for absurd sizes is refused before anything is compiled (`size.py`): a
  count keyword above `MAX_COUNT`, or a smallest answer longer than `MAX_ANSWER_CHARS`.
- Plans are cached by the schema's canonical JSON.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.constrain.guidance import schema_problems
from app.constrain.refuse import meta_check, refuse_if_unreadable, refuse_remote
from app.constrain.size import refuse_absurd
from app.constrain.walk import nodes
from app.constrain.widen import (
    WIDENINGS,
    Widened,
    apply,
    drop,
    keep_ref_targets,
    pattern_properties,
    patterns,
)
from app.errors import SchemaError

_UNIMPLEMENTED = re.compile(r"Unimplemented keys: \[(.*?)\]")


@dataclass(frozen=True)
class Plan:
    """What generation enforces (`generation`) and what `check` verifies after (`widened`)."""

    schema: Mapping[str, Any]
    generation: Mapping[str, Any]
    widened: tuple[Widened, ...] = ()
    fallback: str = ""  # the engine's reason when only the bare type is enforced

    @property
    def full(self) -> bool:
        """Everything enforced by the mask: nothing left to check after."""
        return not self.widened and not self.fallback

    def enforced(self) -> list[str]:
        """The keywords the token mask enforces, sorted."""
        return sorted({k for node, _ in nodes(self.generation, "") for k in node})

    def checked_after(self) -> list[str]:
        """The keywords verified only on the finished answer, sorted (with where)."""
        if self.fallback:
            return [f"the whole schema ({self.fallback})"]
        return [w.said() for w in self.widened]

    def summary(self) -> str:
        """One line for the JSON card and the debug pane."""
        if self.full:
            return "every keyword enforced while generating"
        return "checked after generating: " + "; ".join(self.checked_after())


def _bare(schema: Mapping[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if kind == "object" or (kind is None and "properties" in schema):
        return {"type": "object"}
    return {"type": kind} if isinstance(kind, str | list) else {}


def _make(schema: Mapping[str, Any]) -> Plan:
    if not isinstance(schema, Mapping):
        raise SchemaError("a schema must be a JSON object")
    refuse_absurd(schema)  # first: quick, and before anything could build or compile much
    meta_check(schema)
    refuse_remote(schema)
    generation = copy.deepcopy(dict(schema))
    widened: list[Widened] = []
    keep_ref_targets(generation)
    for widening in WIDENINGS:
        widened += apply(generation, widening)
    problems = schema_problems(generation)
    if any("regex" in p or "lookaround" in p for p in problems):
        widened += apply(generation, patterns)
        problems = schema_problems(generation)
    if any("patternProperty" in p or "regex" in p or "lookaround" in p for p in problems):
        widened += apply(generation, pattern_properties)
        problems = schema_problems(generation)
    unknown = {k for p in problems for m in _UNIMPLEMENTED.findall(p) for k in json.loads(f"[{m}]")}
    if unknown:
        widened += apply(generation, drop(frozenset(unknown)))
        problems = schema_problems(generation)
    refuse_if_unreadable(problems)
    if problems:  # the engine cannot take even the widened schema: only its bare type
        reason = problems[0].split("failed to compile JSON schema: ")[-1]
        return Plan(schema, _bare(schema), (), f"the engine cannot enforce it: {reason}")
    return Plan(schema, generation, tuple(sorted(widened, key=lambda w: (w.pointer, w.keyword))))


_PLANS: dict[str, Plan] = {}


def plan(schema: Mapping[str, Any]) -> Plan:
    """The plan for `schema` (see the module guarantees); `SchemaError` when it is refused."""
    key = json.dumps(schema, sort_keys=True)
    found = _PLANS.get(key)
    if found is None:
        found = _make(schema)
        if len(_PLANS) < 1024:
            _PLANS[key] = found
    return found


def budgeted(generation: Mapping[str, Any], max_tokens: int | None) -> Mapping[str, Any]:
    """`generation` with a length for every string the schema leaves unbounded (no
    `maxLength`, `enum`, `const`, `pattern` or `format`): their share of about three
    characters a token of `max_tokens`, at least 16 — so one rambling string cannot take the
    whole budget from the values after it."""
    if not max_tokens:
        return generation
    out = copy.deepcopy(dict(generation))
    free = [node for node, _ in nodes(out, "") if _unbounded_string(node)]
    for node in free:
        node["maxLength"] = max(16, 3 * max_tokens // len(free))
    return out


def _unbounded_string(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    named = kind == "string" or (isinstance(kind, list) and "string" in kind)
    bounds = ("maxLength", "enum", "const", "pattern", "format")
    return named and not any(k in node for k in bounds)
