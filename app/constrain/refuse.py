"""The schemas JSON mode refuses, each with why: not valid JSON Schema, a definition that is
not there, a reference to another document (JSON mode reads nothing from the network).

Guarantees: a remote `$ref` is refused wherever it sits, even under a keyword the grammar
drops (the check after would need it); the meta-schema check names where the schema is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from app.constrain.walk import nodes
from app.errors import SchemaError

_REMOTE = re.compile(r"Resource '([^']*)' is not present in a registry")
_INVALID = ("Pointer '", "Invalid URI reference", "schema must be an object or boolean")


def refuse_if_unreadable(problems: list[str]) -> None:
    """Refuse what the engine could not read (a remote or invalid reference), else nothing."""
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


def refuse_remote(schema: Mapping[str, Any]) -> None:
    """A `$ref` to another document anywhere (even under a keyword the grammar drops, which
    the check after reads) is refused: only `#…` and the schema's own `$id` are local."""
    own = str(schema.get("$id", "")).rstrip("#")
    for node, _ in nodes(dict(schema), ""):
        for key in ("$ref", "$dynamicRef", "$recursiveRef"):
            ref = node.get(key)
            local = not isinstance(ref, str) or ref.startswith("#")
            if not local and not (own and str(ref).split("#")[0] in (own, "")):
                raise SchemaError(
                    f"the schema references a remote document ({ref}); JSON mode reads nothing"
                    " from the network — include the definition in the schema"
                )


def meta_check(schema: Mapping[str, Any]) -> None:
    """Refuse a schema that is not valid against its meta-schema."""
    from jsonschema import SchemaError as MetaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(dict(schema))
    except MetaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise SchemaError(f"the schema is not valid JSON Schema at {where}: {exc.message}") from exc
