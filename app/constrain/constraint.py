"""JSON mode: response formats, schema checks, and the grammars the worker enforces.

Guarantees:
- A schema is planned before generation (`app/constrain/plan.py`): it must be valid JSON
  Schema with no remote references, else a `SchemaError` says why; the grammar enforces the plan's
  generation schema, and `validate_json` checks the whole original schema after, formats
  included — what the grammar could not enforce is checked, never silently dropped.
- A template builds its own turn's grammar from the pieces here (`json_body`,
  `compile_grammar`, `generation_schema`): Harmony's lives beside the Harmony template
  (`app/templates/harmony_grammar.py`); for other models the whole answer is constrained
  (`json_constraint`). This package imports nothing of the engine, the templates or a model.
- JSON is written without free whitespace: a small model cannot loop in blank space.
- With a token budget (`max_tokens`), a schema whose smallest answer cannot fit in it is a
  `SchemaError` at request time (`size.refuse_over_budget`), before the worker sees it.
- A `Constraint` is a plain value (a grammar string): it crosses the worker pipe unchanged.
- Importing this module loads only the types: the planner, the grammar compiler (llguidance)
  and the validator (jsonschema) load at the first schema, so a window that never uses JSON
  mode never loads them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.domain.events import (
    JsonResult,
)
from app.errors import ErrorCode, SchemaError

if TYPE_CHECKING:  # the planner loads at the first schema, not with the types
    from app.constrain.plan import Plan


class JsonSchemaFormat(BaseModel):
    """`response_format.json_schema` of OpenAI-style APIs (Databricks' included)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field("response", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str | None = None
    schema_: dict[str, Any] = Field(default_factory=lambda: {"type": "object"}, alias="schema")
    strict: bool = True


class ResponseFormat(BaseModel):
    """`text`, any JSON object, or JSON matching a schema."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["text", "json_object", "json_schema"] = "text"
    json_schema: JsonSchemaFormat | None = None

    @property
    def json_schema_dict(self) -> dict[str, Any] | None:
        """The schema the answer must match (None for plain text)."""
        if self.type == "json_object":
            return {"type": "object"}
        if self.type == "json_schema":
            return (self.json_schema or JsonSchemaFormat()).schema_
        return None


ToolChoice = Literal["auto", "none", "required"] | str  # a name forces a call to that function


@dataclass(frozen=True)
class Constraint:
    """What the worker enforces: an llguidance grammar (Lark text)."""

    grammar: str
    description: str = ""
    consumed: tuple[int, ...] = ()  # tokens already generated under it (a continued answer)
    banned: tuple[int, ...] = ()  # not allowed as the first token after `consumed` (a retry)
    closing: str = ""  # how the worker ends the answer in time (`closing.plan_text`)


@dataclass(frozen=True)
class CallSpec:
    """A call the grammar allows besides `functions.*`: a built-in (`python`, `browser.open`)
    or a plugin namespace. `schema` None with `code` True: the body is free text (code)."""

    recipient: str
    channel: str = "analysis"
    schema: Mapping[str, Any] | None = None
    code: bool = False


def check_schema(schema: Mapping[str, Any]) -> Plan:
    """The plan for `schema`: what is enforced and what checked after; `SchemaError` when JSON
    mode cannot take it (see `app/constrain/plan.py`)."""
    from app.constrain.plan import plan

    return plan(schema)


def enforceable(schema: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The schema a tool's calls are held to: `schema` with its local references written in
    place when JSON mode can take it, else None — any JSON object, checked after the call is
    read (a tool whose schema JSON mode refuses still gets called; `call_schema.py` says why)."""
    from app.constrain.call_schema import call_schema

    return call_schema(schema).schema


def json_body(schema: Mapping[str, Any], max_tokens: int | None = None) -> str:
    """The grammar's JSON body for `schema`: what its plan enforces while generating (free
    strings budgeted from `max_tokens` when given; `SchemaError` when its smallest answer
    cannot fit in them)."""
    from app.constrain.guidance import with_options
    from app.constrain.plan import budgeted, plan
    from app.constrain.size import refuse_over_budget

    found = plan(schema)
    if max_tokens:
        refuse_over_budget(schema, max_tokens)
    generation = budgeted(found.generation, max_tokens)
    return f"%json {json.dumps(with_options(generation))}"


def compile_grammar(lark: str) -> str:
    from app.constrain.guidance import compiled

    grammar, problems = compiled(lark)
    if problems:
        raise SchemaError(f"the schema cannot be enforced: {'; '.join(problems)}")
    return grammar


def generation_schema(schema: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The schema the grammar enforces while generating (the plan's), None for none."""
    from app.constrain.plan import plan

    return None if schema is None else plan(schema).generation


def json_constraint(
    schema: Mapping[str, Any] | None,
    *,
    prefix_free_text: bool = False,
    max_tokens: int | None = None,
) -> Constraint:
    """The grammar for a whole answer in JSON (non-Harmony models); `max_tokens` budgets its
    free strings."""
    from app.constrain.closing import plan_text

    body = json_body(schema or {"type": "object"}, max_tokens)
    rules = [f"start: {'THINK ' if prefix_free_text else ''}body", f"body: {body}"]
    if prefix_free_text:
        rules.append("THINK: /<think>(.|\\n)*<\\/think>\\s*/")
    closing = plan_text(
        generation_schema(schema or {"type": "object"}), harmony=False, think=prefix_free_text
    )
    return Constraint(
        compile_grammar("\n".join(rules)), description="whole answer", closing=closing
    )


def validate_json(
    text: str, schema: Mapping[str, Any] | None, *, complete: bool = True, planned: bool = True
) -> JsonResult:
    """Parse and validate an answer against the whole schema (formats checked); a cut-off
    answer is E-STREAM-TRUNCATED, not valid; a violation names its path and keyword. With
    `planned` (the answer was generated here) the result says which keywords the grammar
    enforced and which only this check verified."""
    from app.constrain.plan import plan

    result = _validated(text, schema, complete)
    if not planned:
        return result
    try:
        found = plan(schema or {"type": "object"})
    except SchemaError:
        return result
    return dataclasses.replace(
        result, enforced=tuple(found.enforced()), checked_after=tuple(found.checked_after())
    )


def _validated(text: str, schema: Mapping[str, Any] | None, complete: bool) -> JsonResult:
    from jsonschema import SchemaError as MetaError
    from jsonschema import ValidationError
    from jsonschema.validators import validator_for
    from referencing.exceptions import Unresolvable

    from app.constrain.formats import format_checker

    if not complete:
        return JsonResult(
            False,
            error="the answer was cut off before the JSON ended",
            code=ErrorCode.STREAM_TRUNCATED,
        )
    try:
        value = json.loads(text)
    except ValueError as exc:
        return JsonResult(False, error=f"not JSON: {exc}", code=ErrorCode.BODY_CONSTRAINT_VIOLATION)
    schema = schema or {"type": "object"}
    try:
        validator_for(schema)(schema, format_checker=format_checker()).validate(value)
    except ValidationError as exc:
        path = "".join(
            "/" + str(p).replace("~", "~0").replace("/", "~1") for p in exc.absolute_path
        )
        keyword = str(exc.validator)
        return JsonResult(
            False, value, exc.message, path, ErrorCode.BODY_CONSTRAINT_VIOLATION, keyword
        )
    except (MetaError, Unresolvable) as exc:  # a remote endpoint's schema is not planned here
        why = f"the schema cannot be checked: {exc}"
        return JsonResult(False, value, why, code=ErrorCode.BODY_CONSTRAINT_VIOLATION)
    return JsonResult(True, value)


def tool_schemas(tools: Sequence[Any]) -> dict[str, dict[str, Any] | None]:
    """`{name: parameters}` of domain `ToolDescription`s."""
    return {t.name: t.parameters for t in tools}
