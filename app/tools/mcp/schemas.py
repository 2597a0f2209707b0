"""An MCP tool's input schema as the model is shown it and as its calls are checked.

Guarantees:
- `shown(schema)` is what the model reads and the call grammar holds: the server's schema with
  its local references written in place (`app.domain.schema_refs`: `$defs`, `definitions`,
  pointers, anchors; recursion stays a `$ref`) and every object closed to the properties it
  lists (`closed`). A schema whose references cannot be resolved is shown as the server wrote
  it, closed; it never stops the tool from being offered.
- `closed` closes only an object that stands alone: one that lists `properties`, says nothing of
  others (`additionalProperties`, `unevaluatedProperties`) and is not combined with another
  schema that may add properties (it holds no `allOf`/`anyOf`/`oneOf`/`$ref`/`if`/…, and is no
  part of an `allOf`, nor of an `anyOf`/`oneOf`/conditional beside properties of its parent).
  Values (`const`, `enum`, `default`, `examples`) and keywords that hold no object schema
  (`not`, `propertyNames`, extensions) are never touched.
- `arguments_model(schema)` reports `shown(schema)` and checks every call's arguments against
  the server's own schema with jsonschema as they are read — before anyone is asked to approve
  the call — a call that does not fit is pydantic's `ValidationError` naming where and why. A
  schema jsonschema cannot read (a reference to a place it does not have) checks nothing: the
  server then judges the call.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from app.domain.schema_refs import resolve_refs
from app.errors import SchemaError

_COMBINED = frozenset({"allOf", "anyOf", "oneOf", "$ref", "if", "then", "else"})
_OPEN = frozenset({"additionalProperties", "unevaluatedProperties", "dependentSchemas"})
_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_ONE = ("items", "prefixItems", "additionalProperties", "additionalItems", "contains")
_BRANCHES = ("anyOf", "oneOf", "if", "then", "else")
_BRANCH_MAPS = ("dependentSchemas", "dependencies")


def shown(schema: dict[str, Any]) -> dict[str, Any]:
    """What the model reads of the server's schema (see the module guarantees)."""
    try:
        resolved = resolve_refs(schema)
    except SchemaError:
        resolved = copy.deepcopy(schema)  # the grammar's planner says why: the turn's notice
    out = closed(resolved)
    return out if isinstance(out, dict) else resolved


def closed(schema: Any, alone: bool = True) -> Any:
    """`schema` with every object that stands alone closed to the properties it lists (see the
    module guarantees); `alone` False: `schema` is combined with another schema."""
    if isinstance(schema, list):
        return [closed(s, alone) for s in schema]
    if not isinstance(schema, dict):
        return schema
    lists = "properties" in schema or "patternProperties" in schema
    out = copy.deepcopy(schema)  # values and keywords that hold no object schema, as they are
    for key, value in schema.items():
        if key == "allOf":
            out[key] = closed(value, alone=False)
        elif key in _BRANCHES:
            out[key] = closed(value, alone=not lists)
        elif key in (*_MAPS, *_BRANCH_MAPS) and isinstance(value, dict):
            part = key not in _BRANCH_MAPS or not lists
            out[key] = {k: closed(v, part) if isinstance(v, dict) else v for k, v in value.items()}
        elif key in _ONE:
            out[key] = closed(value)
    if alone and "properties" in out and not (_COMBINED | _OPEN) & set(out):
        out["additionalProperties"] = False
    return out


def misfit(schema: dict[str, Any], arguments: Any) -> str:
    """Where and why `arguments` do not fit the server's `schema` ("" when they do, or when
    jsonschema cannot read the schema)."""
    from jsonschema import SchemaError as MetaError
    from jsonschema import validators
    from jsonschema.exceptions import best_match
    from referencing.exceptions import Unresolvable

    try:
        error = best_match(validators.validator_for(schema)(schema).iter_errors(arguments))
    except (MetaError, Unresolvable):
        return ""  # the server judges the call
    if error is None:
        return ""
    where = "/" + "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}"


def arguments_model(schema: dict[str, Any]) -> type[BaseModel]:
    """The argument model of an MCP tool (see the module guarantees)."""
    reported = shown(schema)

    class Arguments(BaseModel):
        model_config = ConfigDict(extra="allow")

        @model_validator(mode="before")
        @classmethod
        def _fits(cls, raw: Any) -> Any:
            problem = misfit(schema, raw)
            if problem:
                raise PydanticCustomError(
                    "call_schema", "the arguments do not fit the tool ({why})", {"why": problem}
                )
            return raw

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return copy.deepcopy(reported)

    return Arguments


__all__ = ["arguments_model", "closed", "misfit", "shown"]
