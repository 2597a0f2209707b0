"""How one tool's calls are held while the model writes them: its schema in the call grammar, or
no schema at all — never a turn that fails because of a tool's schema.

Guarantees:
- `call_schema(parameters)` first writes the schema's local references in place
  (`app.domain.schema_refs`: `$defs`, `definitions`, pointers, anchors; recursion stays a `$ref`,
  which the constraint engine follows), then plans it as JSON mode does (`plan.py`). A schema it
  can plan is the call's grammar (`schema`); what the plan widened is checked after, as in JSON
  mode. A schema that cannot be planned — a reference to a place it does not have, a remote
  document, a schema that is not valid JSON Schema, sizes JSON mode refuses — leaves the tool's
  calls unconstrained (`schema` None: any JSON object), with the reason in `reason`; so does a
  schema whose smallest value the engine could never finish (a recursion every value must take).
- `notice(name)` is the sentence the turn says for a tool that is not held to its schema (or held
  to its type only): the user reads it, and the tool's calls are checked after they are read.
- Decisions are cached by the schema's canonical JSON; nothing here runs a model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.constrain.finite import unfinishable
from app.domain.schema_refs import resolve_refs
from app.errors import SchemaError


@dataclass(frozen=True)
class CallSchema:
    """A tool's arguments as the call grammar holds them."""

    schema: Mapping[str, Any] | None  # the grammar's schema (None: any JSON object)
    reason: str = ""  # why the grammar does not hold the whole schema ("": it does)
    typed_only: bool = False  # the grammar holds the arguments' type only (checked after)

    def notice(self, name: str) -> str:
        """What the turn says of tool `name` ("" when its schema is held)."""
        if not self.reason:
            return ""
        held = "held to their type only" if self.typed_only else "not held to its schema"
        return (
            f"The arguments of {name} are {held} while the model writes them ({self.reason});"
            " each call is checked against the schema once read, and one that does not fit is"
            " sent back to the model once to be repaired."
        )


_DECIDED: dict[str, CallSchema] = {}


def call_schema(parameters: Mapping[str, Any] | None) -> CallSchema:
    """How the calls of a tool with `parameters` are held (see the module guarantees)."""
    if parameters is None:
        return CallSchema(None)
    key = json.dumps(parameters, sort_keys=True, default=str)
    found = _DECIDED.get(key)
    if found is None:
        found = _decide(parameters)
        if len(_DECIDED) < 1024:
            _DECIDED[key] = found
    return found


def _decide(parameters: Mapping[str, Any]) -> CallSchema:
    from app.constrain.plan import plan

    try:
        resolved = resolve_refs(parameters)
        found = plan(resolved)
    except SchemaError as exc:
        return CallSchema(None, exc.message)
    if found.fallback:
        return CallSchema(resolved, found.fallback, typed_only=True)
    endless = unfinishable(found.generation)  # the grammar would never let the call end
    if endless:
        return CallSchema(None, endless)
    return CallSchema(resolved)


__all__ = ["CallSchema", "call_schema"]
