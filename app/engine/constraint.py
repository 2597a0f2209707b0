"""JSON mode: response formats, schema checks, and the grammars the worker enforces.

Guarantees:
- A schema is planned before generation (`json_plan`): it must be valid JSON Schema with no
  remote references, else a `SchemaError` says why; the grammar enforces the plan's
  generation schema, and `validate_json` checks the whole original schema after, formats
  included — what the grammar could not enforce is checked, never silently dropped.
- For Harmony models only the `final` body (or the arguments of a tool call) is constrained;
  analysis stays free text. The header words the app knows in advance are grammar tokens given
  by id (`<[id]>`), so the model cannot spell them in non-canonical pieces, and the grammar
  ends with the right stop id (`<|return|>` after an answer, `<|call|>` after a call).
- For other models the whole answer is constrained.
- JSON is written without free whitespace: a small model cannot loop in blank space.
- A `Constraint` is a plain value (a grammar string): it crosses the worker pipe unchanged.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.domain.events import (  # re-exported: the one event union lives in domain
    JsonResult as JsonResult,
)
from app.engine.closing import plan_text
from app.engine.json_plan import (
    Plan,
    budgeted,
    compiled,
    format_checker,
    plan,
    with_options,
)
from app.engine.json_plan import SchemaError as SchemaError  # re-exported
from app.errors import ErrorCode
from app.harmony import encoding as enc


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


def check_schema(schema: Mapping[str, Any]) -> Plan:
    """The plan for `schema`: what is enforced and what checked after; `SchemaError` when JSON
    mode cannot take it (see `json_plan`)."""
    return plan(schema)


def enforceable(schema: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """`schema` when JSON mode can take it, else None: any JSON object, which the tool then
    checks itself (a tool whose schema JSON mode refuses still gets called)."""
    if schema is None:
        return None
    try:
        plan(schema)
    except SchemaError:
        return None
    return schema


def _body(schema: Mapping[str, Any], max_tokens: int | None = None) -> str:
    """The grammar's JSON body for `schema`: what its plan enforces while generating (free
    strings budgeted from `max_tokens` when given)."""
    generation = budgeted(plan(schema).generation, max_tokens)
    return f"%json {json.dumps(with_options(generation))}"


def _compile(lark: str) -> str:
    grammar, problems = compiled(lark)
    if problems:
        raise SchemaError(f"the schema cannot be enforced: {'; '.join(problems)}")
    return grammar


def _tok(token: int) -> str:
    return f"<[{token}]>"


def _ids(text: str) -> str:
    return " ".join(f"<[{t}]>" for t in enc.load_encoding().encode_ordinary(text))


@dataclass(frozen=True)
class CallSpec:
    """A call the grammar allows besides `functions.*`: a built-in (`python`, `browser.open`)
    or a plugin namespace. `schema` None with `code` True: the body is free text (code)."""

    recipient: str
    channel: str = "analysis"
    schema: Mapping[str, Any] | None = None
    code: bool = False


def _tool_call(spec: CallSpec) -> str:
    content_type = [_ids(" code")] if spec.code else [_ids(" "), _tok(enc.CONSTRAIN), _ids("json")]
    header = " ".join(
        [
            _tok(enc.CHANNEL),
            _ids(spec.channel),
            _ids(f" to={spec.recipient}"),
            *content_type,
            _tok(enc.MESSAGE),
        ]
    )
    if spec.code:
        return f"{header} TEXT <[{enc.CALL}]>"
    return f"{header} {_body(spec.schema or {'type': 'object'})} <[{enc.CALL}]>"


def _call_specs(
    tools: dict[str, Mapping[str, Any] | None], tool_choice: ToolChoice, calls: Sequence[CallSpec]
) -> tuple[list[CallSpec], ToolChoice]:
    """The calls the model may make, and the choice that is left (a named one: `required`)."""
    specs = [CallSpec(f"functions.{name}", "commentary", params) for name, params in tools.items()]
    if isinstance(tool_choice, str) and tool_choice not in ("auto", "none", "required"):
        if tool_choice not in tools:
            raise SchemaError(
                f"tool_choice names {tool_choice!r}, which is not among the tools: {sorted(tools)}"
            )
        return [CallSpec(f"functions.{tool_choice}", "commentary", tools[tool_choice])], "required"
    return specs + list(calls), tool_choice


def _reasoning_frame(channel: str) -> str:
    """A reasoning message on `channel` (free text), then the next assistant message."""
    parts = [_tok(enc.CHANNEL), _ids(channel), _tok(enc.MESSAGE), "thought", _tok(enc.END)]
    return " ".join([*parts, _tok(enc.START), _ids("assistant")])


def harmony_constraint(
    schema: Mapping[str, Any] | None,
    *,
    tools: Mapping[str, Mapping[str, Any] | None] | None = None,
    tool_choice: ToolChoice = "auto",
    thinking_budget: int | None = None,
    calls: Sequence[CallSpec] = (),
    max_tokens: int | None = None,
) -> Constraint:
    """The grammar for a gpt-oss turn: free analysis, then a constrained answer or tool call.

    `tools` are the `functions` (called on `commentary` with JSON arguments); `calls` are
    the other tools the model may call (built-ins on `analysis`). A `tool_choice` naming a
    function allows only that call. `thinking_budget` caps each analysis or preamble message
    at that many tokens, and their number at four (the model must then move on); None leaves
    reasoning unbounded. `max_tokens` budgets the answer's free strings."""
    specs, tool_choice = _call_specs(dict(tools or {}), tool_choice, calls)
    for spec in specs:
        if spec.schema is not None:
            check_schema(spec.schema)
    if schema is not None:
        check_schema(schema)
    analysis, preamble = _reasoning_frame("analysis"), _reasoning_frame("commentary")
    budget = f"[max_tokens={thinking_budget}]" if thinking_budget else ""
    repeat = "{0,4}" if thinking_budget else "*"  # with a budget, at most four reasoning messages
    final_body = _body(schema, max_tokens) if schema is not None else "TEXT"
    answer = f"<[{enc.CHANNEL}]> {_ids('final')} <[{enc.MESSAGE}]> {final_body} <[{enc.RETURN}]>"
    choices = []
    if tool_choice != "required":
        choices.append("answer")
    if tool_choice != "none":
        choices += [f"call_{i}" for i in range(len(specs))]
    if not choices:
        raise SchemaError("tool_choice 'required' needs at least one tool")
    rules = [
        f"start: (analysis | preamble){repeat} ({' | '.join(choices)})",
        f"analysis: {analysis}",
        f"preamble: {preamble}",
        f"answer: {answer}",
        *(f"call_{i}: {_tool_call(spec)}" for i, spec in enumerate(specs)),
        "TEXT: /(.|\\n)*/",
        f"thought{budget}: /(.|\\n)*/",
    ]
    # The schemas were checked above; the frame around them names tokens by id, which only the
    # worker's tokenizer can check (a bad frame is a bug, reported when the worker builds it).
    import llguidance

    grammar = llguidance.LLMatcher.grammar_from_lark("\n".join(rules))
    closing = plan_text(
        _generation(schema),
        harmony=True,
        tools={
            s.recipient: _generation(s.schema or {"type": "object"}) for s in specs if not s.code
        },
        answer_allowed=tool_choice != "required",
        frame=_frame(),
    )
    return Constraint(grammar, description=f"harmony, tool_choice={tool_choice}", closing=closing)


def _generation(schema: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    return None if schema is None else plan(schema).generation


def _frame() -> dict[str, Any]:
    """The Harmony ids the closer needs to leave reasoning for the answer, or end a body."""
    words = enc.load_encoding()
    return {
        "end": enc.END,
        "start": enc.START,
        "channel": enc.CHANNEL,
        "message": enc.MESSAGE,
        "return": enc.RETURN,
        "call": enc.CALL,
        "assistant": words.encode_ordinary("assistant"),
        "final": words.encode_ordinary("final"),
    }


def json_constraint(
    schema: Mapping[str, Any] | None,
    *,
    prefix_free_text: bool = False,
    max_tokens: int | None = None,
) -> Constraint:
    """The grammar for a whole answer in JSON (non-Harmony models); `max_tokens` budgets its
    free strings."""
    body = _body(schema or {"type": "object"}, max_tokens)
    rules = [f"start: {'THINK ' if prefix_free_text else ''}body", f"body: {body}"]
    if prefix_free_text:
        rules.append("THINK: /<think>(.|\\n)*<\\/think>\\s*/")
    closing = plan_text(_generation(schema or {"type": "object"}), harmony=False,
                        think=prefix_free_text)  # fmt: skip
    return Constraint(_compile("\n".join(rules)), description="whole answer", closing=closing)


def validate_json(
    text: str, schema: Mapping[str, Any] | None, *, complete: bool = True, planned: bool = True
) -> JsonResult:
    """Parse and validate an answer against the whole schema (formats checked); a cut-off
    answer is E-STREAM-TRUNCATED, not valid; a violation names its path and keyword. With
    `planned` (the answer was generated here) the result says which keywords the grammar
    enforced and which only this check verified."""
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
