"""A JSON schema's local references resolved: what a tool's schema means, written out where a
model and a grammar can read it.

Guarantees:
- `resolve_refs(schema)` gives an equivalent schema (the same instances are valid) in which every
  local `$ref` — a JSON pointer into the schema (`#/$defs/…`, `#/definitions/…`, `#/properties/…`,
  `#`), an `$anchor`, either one prefixed with the schema's own `$id` — is written in place; only a
  reference back into a definition that is being written out (recursion) stays a `$ref`, to a
  definition of the result's own (`$defs`, or `definitions` for a draft 4 to 7 schema) named after
  the original. Nothing else is changed: a schema without references comes back equal.
- A `$ref`'s sibling keywords keep the meaning of the schema's draft: ignored up to draft 7
  (annotations such as `description` are kept), applied beside the target from 2019-09 on —
  merged into it where no keyword of one could change what a keyword of the other means, else
  as `allOf` of both.
- A reference to a place the schema does not have is a `SchemaError` naming it and where it is.
- What cannot be resolved here is left as it is (the schema comes back unchanged): a reference
  to another document, a `$dynamicRef` or `$recursiveRef`, an `$id` below the top (a new base
  for the references under it), and a result larger than `MAX_NODES` subschemas or deeper than
  `MAX_DEPTH` (references that fan out).
- Pure and bounded: never reads a file or the network; the input is never modified.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from app.errors import SchemaError

MAX_NODES = 20_000  # subschemas the result may have (shared definitions can fan out)
MAX_DEPTH = 64  # nesting of the result

# the keywords that hold subschemas (JSON Schema 2020-12 and draft 7): a map of them, a list,
# one (`constrain.walk` walks the same), and where definitions are kept
SCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas")
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
SCHEMA_ONE = (
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
DEF_KEYS = ("$defs", "definitions")
# a `$ref`'s siblings kept in every draft: annotations, and what says how to read the schema
_KEPT = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"}
    | {"$comment", "$schema", "$id"}
)
# keywords whose meaning depends on others in the same object: never split between two merged
_TIED = (
    frozenset({"properties", "patternProperties", "additionalProperties"}),
    frozenset({"items", "prefixItems", "additionalItems"}),
    frozenset({"if", "then", "else"}),
    frozenset({"contains", "minContains", "maxContains"}),
)
# read with the schema's reader only: dynamic references, and keywords that see what a `$ref`'s
# target evaluated (writing the target elsewhere would change what they see)
_LEFT = frozenset({"$dynamicRef", "$recursiveRef", "unevaluatedProperties", "unevaluatedItems"})
_OLD_DRAFTS = re.compile(r"draft-0[3-7]/")
_ROOT, _TOP = "root", "top"  # where a subschema goes in the result: the root, a root property


class _Unresolvable(Exception):
    """Something this module leaves to the schema's reader (the schema comes back unchanged)."""


def resolve_refs(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` with its local references written in place (see the module guarantees)."""
    copied = copy.deepcopy(dict(schema))
    if not _has_refs(copied):
        return copied
    try:
        return _Resolver(copied).result()
    except _Unresolvable:
        return copied


def _has_refs(value: Any) -> bool:
    if isinstance(value, Mapping):
        return "$ref" in value or any(_has_refs(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_refs(v) for v in value)
    return False


class _Resolver:
    """One resolution: the root, its anchors, and the definitions the result needs."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.own = str(root.get("$id", "")).split("#")[0]
        self.old = bool(_OLD_DRAFTS.search(str(root.get("$schema", ""))))
        self.anchors: dict[str, str] = {}
        self._scan(root, "", top=True)
        self.names: dict[str, str] = {}  # target pointer → its definition's name in the result
        self.cycles = self._cycles()  # targets a reference leads back to
        self.nodes = 0
        self.depth = 0

    def result(self) -> dict[str, Any]:
        out = self._schema(self.root, "", ("",), _ROOT)
        defs: dict[str, Any] = {}
        while len(defs) < len(self.names):  # a definition written may need another
            for pointer, name in list(self.names.items()):
                if name not in defs:
                    defs[name] = self._schema(self._target(pointer), pointer, (pointer,), "")
        out = out if isinstance(out, dict) else {"allOf": [out]}
        if defs:
            out[self._defs_key()] = defs
        return out

    # --- what the schema holds -----------------------------------------------------------

    def _scan(self, node: Any, pointer: str, top: bool = False) -> None:
        """Refuse what is left to the reader; note every `$anchor`."""
        if isinstance(node, list):
            for i, item in enumerate(node):
                self._scan(item, f"{pointer}/{i}")
            return
        if not isinstance(node, Mapping):
            return
        if _LEFT & set(node) or ("$id" in node and not top):
            raise _Unresolvable
        anchor = node.get("$anchor")
        if isinstance(anchor, str):
            self.anchors[anchor] = pointer
        for key, value in node.items():
            if key not in ("const", "enum", "default", "examples", "example"):
                self._scan(value, f"{pointer}/{_escape(str(key))}")

    def _pointer(self, ref: str) -> str:
        """The JSON pointer a local `$ref` names."""
        base, _, fragment = ref.partition("#")
        if base and base != self.own:
            raise _Unresolvable  # another document: the schema's reader refuses it
        fragment = unquote(fragment)
        if fragment and not fragment.startswith("/"):
            if fragment not in self.anchors:
                raise SchemaError(f"the schema has no anchor {fragment!r} (its $ref {ref!r})")
            return self.anchors[fragment]
        return fragment

    def _cycles(self) -> frozenset[str]:
        """The targets that lead back to themselves through references."""
        edges: dict[str, set[str]] = {}
        todo = [""]
        while todo:
            target = todo.pop()
            if target in edges:
                continue
            try:
                found = self._target(target)
            except SchemaError:
                found = None  # said with where it is when it is written out
            edges[target] = {self._pointer(r) for r in _refs_in(found)}
            todo.extend(edges[target])
        return frozenset(t for t in edges if t in _reached(edges, t))

    def _target(self, pointer: str) -> Any:
        node: Any = self.root
        for part in pointer.split("/")[1:]:
            key = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise SchemaError(
                    f"the schema points at a definition that is not there: #{pointer}"
                )
        return node

    # --- writing it out ------------------------------------------------------------------

    def _schema(self, node: Any, pointer: str, stack: tuple[str, ...], place: str = "") -> Any:
        """`node` written out; `stack` holds the targets being written (recursion stays);
        `place` says where in the result it goes (`_ROOT`, `_TOP`: a property of the root)."""
        self.nodes += 1
        if self.nodes > MAX_NODES or self.depth > MAX_DEPTH:
            raise _Unresolvable
        if not isinstance(node, Mapping):
            return copy.deepcopy(node)
        self.depth += 1
        try:
            ref = node.get("$ref")
            if isinstance(ref, str):
                return self._ref(node, ref, pointer, stack, place)
            return self._keywords(node, pointer, stack, place)
        finally:
            self.depth -= 1

    def _keywords(
        self, node: Mapping[str, Any], pointer: str, stack: tuple[str, ...], place: str = ""
    ) -> Any:
        out: dict[str, Any] = {}
        inner = _TOP if place == _ROOT else ""
        for key, value in node.items():
            where = f"{pointer}/{_escape(key)}"
            if key in DEF_KEYS or key == "$anchor":
                continue  # every reference into them is written out
            if key in SCHEMA_MAPS and isinstance(value, Mapping):
                at = inner if key == "properties" else ""
                out[key] = {
                    k: self._schema(v, f"{where}/{_escape(k)}", stack, at) for k, v in value.items()
                }
            elif key in SCHEMA_LISTS and isinstance(value, list):
                out[key] = [self._schema(v, f"{where}/{i}", stack) for i, v in enumerate(value)]
            elif key in (*SCHEMA_ONE, "items") or (
                key == "dependencies" and isinstance(value, Mapping)
            ):
                out[key] = self._under(key, value, where, stack)
            else:
                out[key] = copy.deepcopy(value)
        return out

    def _under(self, key: str, value: Any, where: str, stack: tuple[str, ...]) -> Any:
        """`items` (one or a list), `dependencies` (schemas or names) and single subschemas."""
        if key == "items" and isinstance(value, list):
            return [self._schema(v, f"{where}/{i}", stack) for i, v in enumerate(value)]
        if key == "dependencies":
            return {
                k: v if isinstance(v, list) else self._schema(v, f"{where}/{_escape(k)}", stack)
                for k, v in value.items()
            }
        return self._schema(value, where, stack)

    def _ref(
        self, node: Mapping[str, Any], ref: str, pointer: str, stack: tuple[str, ...], place: str
    ) -> Any:
        try:
            target = self._pointer(ref)
            found = self._target(target)
        except SchemaError as exc:
            raise SchemaError(f"{exc.message} (at {pointer or '/'})") from None
        # recursion: a reference to the result's own definition, written out one level where the
        # root or a property of the root refers to it, so that its shape reads at once
        if target in stack or (target in self.cycles and not place):
            written: Any = {"$ref": f"#/{self._defs_key()}/{self._name(target)}"}
        else:
            written = self._schema(found, target, (*stack, target), place)
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        return self._beside(written, siblings, pointer, stack, place)

    def _beside(
        self,
        written: Any,
        siblings: dict[str, Any],
        pointer: str,
        stack: tuple[str, ...],
        place: str,
    ) -> Any:
        """The target with the `$ref`'s siblings, as the schema's draft reads them."""
        if written is False:
            return False
        notes = {k: copy.deepcopy(v) for k, v in siblings.items() if k in _KEPT}
        rules = {k: v for k, v in siblings.items() if k not in _KEPT}
        extra = {} if self.old else self._keywords(rules, pointer, stack, place)
        base = {} if written is True else written
        if _mergeable(base, extra):
            return {**base, **extra, **notes}
        return {"allOf": [base, extra], **notes}

    def _defs_key(self) -> str:
        return "definitions" if self.old else "$defs"

    def _name(self, pointer: str) -> str:
        """The result's name for the definition at `pointer` (unique, plain characters)."""
        if pointer not in self.names:
            last = pointer.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~") or "root"
            base = re.sub(r"[^A-Za-z0-9_.-]", "_", last)[:60] or "def"
            name, n = base, 1
            while name in self.names.values():
                n += 1
                name = f"{base}_{n}"
            self.names[pointer] = name
        return self.names[pointer]


def _refs_in(node: Any) -> list[str]:
    """The `$ref`s under `node` (not under its definitions, nor in values)."""
    if isinstance(node, list):
        return [r for item in node for r in _refs_in(item)]
    if not isinstance(node, Mapping):
        return []
    own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
    skip = (*DEF_KEYS, "const", "enum", "default", "examples", "example")
    return own + [r for k, v in node.items() if k not in skip for r in _refs_in(v)]


def _reached(edges: Mapping[str, set[str]], start: str) -> set[str]:
    """The targets reached from `start` by one reference or more."""
    seen: set[str] = set()
    todo = list(edges.get(start, ()))
    while todo:
        target = todo.pop()
        if target not in seen:
            seen.add(target)
            todo.extend(edges.get(target, ()))
    return seen


def _mergeable(target: Mapping[str, Any], extra: Mapping[str, Any]) -> bool:
    """Whether one object may hold both: no keyword in both, none tied to one in the other."""
    if set(target) & set(extra):
        return False
    return not any(tied & set(target) and tied & set(extra) for tied in _TIED)


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


__all__ = [
    "DEF_KEYS",
    "MAX_DEPTH",
    "MAX_NODES",
    "SCHEMA_LISTS",
    "SCHEMA_MAPS",
    "SCHEMA_ONE",
    "resolve_refs",
]
