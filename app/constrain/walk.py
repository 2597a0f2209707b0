"""Walking a JSON schema: every subschema with its JSON pointer, keywords only, never data.

Guarantees: every place a subschema may sit is visited (the keyword maps and lists, `items`
in both forms, `dependencies`, and containers of a schema's own that a `$ref` may point into);
values under data keywords (`const`, `enum`, `default`, `examples`, `required`) are never
taken for schemas; pointers are escaped as RFC 6901 says.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from app.domain.schema_refs import DEF_KEYS, SCHEMA_LISTS, SCHEMA_MAPS, SCHEMA_ONE

_SCHEMA_MAPS = (*SCHEMA_MAPS, *DEF_KEYS)  # a `$ref` may point into the definitions too
_DATA = ("const", "enum", "default", "examples", "example", "required", "x-guidance")
_KNOWN = frozenset((*_SCHEMA_MAPS, *SCHEMA_LISTS, *SCHEMA_ONE, *_DATA, "items", "dependencies"))


def children(node: Mapping[str, Any], pointer: str) -> Iterator[tuple[Any, str]]:
    """The subschemas directly under `node`, with their pointers."""
    yield from _keyword_schemas(node, pointer)
    yield from _items(node.get("items"), pointer)
    dependencies = node.get("dependencies")
    if isinstance(dependencies, Mapping):
        for name, child in dependencies.items():
            if isinstance(child, Mapping):
                yield child, f"{pointer}/dependencies/{escape(str(name))}"
    for key, value in node.items():  # a container of its own (`$ref` may point anywhere)
        if key not in _KNOWN and isinstance(value, Mapping):
            yield value, f"{pointer}/{escape(str(key))}"


def _keyword_schemas(node: Mapping[str, Any], pointer: str) -> Iterator[tuple[Any, str]]:
    """The subschemas under the keywords that hold schemas: maps, lists and single ones."""
    for key in _SCHEMA_MAPS:
        value = node.get(key)
        if isinstance(value, Mapping):
            for name, child in value.items():
                yield child, f"{pointer}/{key}/{escape(str(name))}"
    for key in SCHEMA_LISTS:
        value = node.get(key)
        if isinstance(value, list):
            for i, child in enumerate(value):
                yield child, f"{pointer}/{key}/{i}"
    for key in SCHEMA_ONE:
        if key in node:
            yield node[key], f"{pointer}/{key}"


def _items(items: Any, pointer: str) -> Iterator[tuple[Any, str]]:
    """`items` as one schema or a list of them (draft 4 to 2019-09)."""
    if isinstance(items, list):
        for i, child in enumerate(items):
            yield child, f"{pointer}/items/{i}"
    elif items is not None:
        yield items, f"{pointer}/items"


def nodes(node: Any, pointer: str) -> Iterator[tuple[dict[str, Any], str]]:
    """Every subschema that is an object, with its pointer (keywords only, never data)."""
    if not isinstance(node, dict):
        return
    yield node, pointer
    for child, where in children(node, pointer):
        yield from nodes(child, where)


def subschemas(schema: Any) -> list[dict[str, Any]]:
    """Every subschema that is an object, the schema itself excluded."""
    return [node for node, pointer in nodes(schema, "") if pointer]


def escape(name: str) -> str:
    """`name` as one JSON-pointer step (RFC 6901)."""
    return name.replace("~", "~0").replace("/", "~1")
