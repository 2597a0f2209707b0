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
- Plans are cached by the schema's canonical JSON.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from app.errors import ErrorCode, HarmonyDeskError

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
JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ",", "key_separator": ":"}
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = (
    "additionalProperties",
    "additionalItems",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
)


_DATA = ("const", "enum", "default", "examples", "example", "required", "x-guidance")
_KNOWN = frozenset((*_SCHEMA_MAPS, *_SCHEMA_LISTS, *_SCHEMA_ONE, *_DATA, "items", "dependencies"))


class SchemaError(HarmonyDeskError):
    """A schema JSON mode cannot take: which keyword or place, and why."""

    code = ErrorCode.INPUT_INVALID


@dataclass(frozen=True)
class Widened:
    """One keyword the grammar does not enforce."""

    pointer: str  # where, as a JSON pointer ("" is the whole schema)
    keyword: str
    checked: bool = True  # False: a format no checker knows (neither enforced nor checked)

    def said(self) -> str:
        where = self.pointer or "/"
        return f"{self.keyword} at {where}" + ("" if self.checked else " (not checked)")


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
        return sorted({k for node, _ in _nodes(self.generation, "") for k in node})

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


# --- walking schemas -------------------------------------------------------------------------


def _children(node: Mapping[str, Any], pointer: str) -> Iterator[tuple[Any, str]]:
    for key in _SCHEMA_MAPS:
        value = node.get(key)
        if isinstance(value, Mapping):
            for name, child in value.items():
                yield child, f"{pointer}/{key}/{_escape(str(name))}"
    for key in _SCHEMA_LISTS:
        value = node.get(key)
        if isinstance(value, list):
            for i, child in enumerate(value):
                yield child, f"{pointer}/{key}/{i}"
    for key in _SCHEMA_ONE:
        if key in node:
            yield node[key], f"{pointer}/{key}"
    items = node.get("items")
    if isinstance(items, list):
        for i, child in enumerate(items):
            yield child, f"{pointer}/items/{i}"
    elif items is not None:
        yield items, f"{pointer}/items"
    dependencies = node.get("dependencies")
    if isinstance(dependencies, Mapping):
        for name, child in dependencies.items():
            if isinstance(child, Mapping):
                yield child, f"{pointer}/dependencies/{_escape(str(name))}"
    for key, value in node.items():  # a container of its own (`$ref` may point anywhere)
        if key not in _KNOWN and isinstance(value, Mapping):
            yield value, f"{pointer}/{_escape(str(key))}"


def _nodes(node: Any, pointer: str) -> Iterator[tuple[dict[str, Any], str]]:
    """Every subschema that is an object, with its pointer (keywords only, never data)."""
    if not isinstance(node, dict):
        return
    yield node, pointer
    for child, where in _children(node, pointer):
        yield from _nodes(child, where)


def subschemas(schema: Any) -> list[dict[str, Any]]:
    """Every subschema that is an object, the schema itself excluded."""
    return [node for node, pointer in _nodes(schema, "") if pointer]


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


# --- widening --------------------------------------------------------------------------------

Widening = Callable[[dict[str, Any], str], list[Widened]]


def _drop(keys: tuple[str, ...] | frozenset[str]) -> Widening:
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


def _patterns(node: dict[str, Any], pointer: str) -> list[Widened]:
    pattern = node.get("pattern")
    if not isinstance(pattern, str) or _engine_reads(pattern):
        return []
    del node["pattern"]
    return [Widened(pointer, "pattern")]


def _pattern_properties(node: dict[str, Any], pointer: str) -> list[Widened]:
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


def _keep_ref_targets(schema: dict[str, Any]) -> None:
    """A `$ref` into a keyword that widening drops (`#/…/if`) points at a copy instead."""
    widened = {*DROPPED, "oneOf", "patternProperties"}
    kept: dict[str, Any] = {}
    for node, _ in list(_nodes(schema, "")):
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


def _apply(schema: dict[str, Any], widening: Widening) -> list[Widened]:
    out: list[Widened] = []
    for node, pointer in list(_nodes(schema, "")):
        out += widening(node, pointer)
    return out


# --- the engine --------------------------------------------------------------------------------


def with_options(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema as the engine reads it: compact JSON, no free whitespace."""
    return {**schema, "x-guidance": {**JSON_OPTIONS, **schema.get("x-guidance", {})}}


def compiled(lark: str) -> tuple[str, list[str]]:
    """The grammar llguidance makes of `lark`, and what it says about it: no problems when it
    takes the grammar without widening anything (a warning is a silent widening)."""
    import llguidance

    grammar = llguidance.LLMatcher.grammar_from_lark(lark)
    is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar)
    problems = [m.splitlines()[0] for m in messages if m] or (["rejected"] if is_error else [])
    return grammar, problems


def _schema_problems(schema: Mapping[str, Any]) -> list[str]:
    return compiled("start: body\nbody: %json " + json.dumps(with_options(schema)))[1]


@cache
def _engine_reads(pattern: str) -> bool:
    return not _schema_problems({"type": "string", "pattern": pattern})


_REMOTE = re.compile(r"Resource '([^']*)' is not present in a registry")
_INVALID = ("Pointer '", "Invalid URI reference", "schema must be an object or boolean")
_UNIMPLEMENTED = re.compile(r"Unimplemented keys: \[(.*?)\]")


def _refuse_if_unreadable(problems: list[str]) -> None:
    for problem in problems:
        remote = _REMOTE.search(problem)
        if remote:
            raise SchemaError(
                f"the schema references a remote document ({remote.group(1)}); JSON mode reads"
                " nothing from the network — include the definition in the schema"
            )
        if any(mark in problem for mark in _INVALID):
            detail = problem.split("failed to compile JSON schema: ")[-1]
            raise SchemaError(f"the schema is not valid JSON Schema: {detail}")


def _refuse_remote(schema: Mapping[str, Any]) -> None:
    """A `$ref` to another document anywhere (even under a keyword the grammar drops, which
    the check after reads) is refused: only `#…` and the schema's own `$id` are local."""
    own = str(schema.get("$id", "")).rstrip("#")
    for node, _ in _nodes(dict(schema), ""):
        for key in ("$ref", "$dynamicRef", "$recursiveRef"):
            ref = node.get(key)
            local = not isinstance(ref, str) or ref.startswith("#")
            if not local and not (own and str(ref).split("#")[0] in (own, "")):
                raise SchemaError(
                    f"the schema references a remote document ({ref}); JSON mode reads nothing"
                    " from the network — include the definition in the schema"
                )


def _meta_check(schema: Mapping[str, Any]) -> None:
    from jsonschema import SchemaError as MetaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(dict(schema))
    except MetaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise SchemaError(f"the schema is not valid JSON Schema at {where}: {exc.message}") from exc


_WIDENINGS: tuple[Widening, ...] = (  # `oneOf` last: the pointers name the schema as written
    _formats,
    _drop(DROPPED),
    _open_counts,
    _huge_bounds,
    _one_of,
)


def _bare(schema: Mapping[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if kind == "object" or (kind is None and "properties" in schema):
        return {"type": "object"}
    return {"type": kind} if isinstance(kind, str | list) else {}


def _make(schema: Mapping[str, Any]) -> Plan:
    if not isinstance(schema, Mapping):
        raise SchemaError("a schema must be a JSON object")
    _meta_check(schema)
    _refuse_remote(schema)
    generation = copy.deepcopy(dict(schema))
    widened: list[Widened] = []
    _keep_ref_targets(generation)
    for widening in _WIDENINGS:
        widened += _apply(generation, widening)
    problems = _schema_problems(generation)
    if any("regex" in p or "lookaround" in p for p in problems):
        widened += _apply(generation, _patterns)
        problems = _schema_problems(generation)
    if any("patternProperty" in p or "regex" in p or "lookaround" in p for p in problems):
        widened += _apply(generation, _pattern_properties)
        problems = _schema_problems(generation)
    unknown = {k for p in problems for m in _UNIMPLEMENTED.findall(p) for k in json.loads(f"[{m}]")}
    if unknown:
        widened += _apply(generation, _drop(frozenset(unknown)))
        problems = _schema_problems(generation)
    _refuse_if_unreadable(problems)
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
    free = [node for node, _ in _nodes(out, "") if _unbounded_string(node)]
    for node in free:
        node["maxLength"] = max(16, 3 * max_tokens // len(free))
    return out


def _unbounded_string(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    named = kind == "string" or (isinstance(kind, list) and "string" in kind)
    bounds = ("maxLength", "enum", "const", "pattern", "format")
    return named and not any(k in node for k in bounds)


# --- the check after ---------------------------------------------------------------------------

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"
)


@cache
def format_checker() -> Any:
    """jsonschema's format checker, with `semver` and `url` besides the formats it knows."""
    from urllib.parse import urlsplit

    from jsonschema import FormatChecker

    checker = FormatChecker()

    @checker.checks("semver")
    def _semver(value: object) -> bool:
        return not isinstance(value, str) or bool(_SEMVER.match(value))

    @checker.checks("url")
    def _url(value: object) -> bool:
        if not isinstance(value, str):
            return True
        parts = urlsplit(value)
        return bool(parts.scheme and (parts.netloc or parts.scheme in ("mailto", "file")))

    return checker


__all__ = [
    "DROPPED",
    "ENGINE_FORMATS",
    "Plan",
    "SchemaError",
    "Widened",
    "budgeted",
    "compiled",
    "format_checker",
    "plan",
    "subschemas",
    "with_options",
]
