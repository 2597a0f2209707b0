"""The grammar of a gpt-oss turn (Harmony): free reasoning, then a constrained answer or call.

Guarantees: only the `final` body (or the arguments of a tool call) is constrained; analysis
and preambles stay free text (capped by a thinking budget when one is given). The header words
the app knows in advance are grammar tokens given by id (`<[id]>`), so the model cannot spell
them in non-canonical pieces, and the grammar ends with the right stop id (`<|return|>` after an
answer, `<|call|>` after a call). A `tool_choice` naming a function allows only that call;
`required` allows no answer. Built from JSON mode's pieces (`app/constrain`); the result is a
plain `Constraint` that crosses the worker pipe unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.constrain.constraint import (
    CallSpec,
    Constraint,
    ToolChoice,
    check_schema,
    generation_schema,
    json_body,
)
from app.errors import SchemaError
from app.harmony import encoding as enc


def _tok(token: int) -> str:
    return f"<[{token}]>"


def _ids(text: str) -> str:
    return " ".join(f"<[{t}]>" for t in enc.load_encoding().encode_ordinary(text))


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
    return f"{header} {json_body(spec.schema or {'type': 'object'})} <[{enc.CALL}]>"


def _call_specs(
    tools: dict[str, Mapping[str, Any] | None], tool_choice: ToolChoice, calls: Sequence[CallSpec]
) -> tuple[list[CallSpec], ToolChoice]:
    """The calls the model may make, and the choice that is left (a named one: `required`)."""
    specs = [CallSpec(f"functions.{name}", "commentary", params) for name, params in tools.items()]
    if isinstance(tool_choice, str) and tool_choice not in ("auto", "none", "required"):
        # a name the request checked (`GenerationRequest`): a function, or a built-in call
        named = [CallSpec(f"functions.{n}", "commentary", p) for n, p in tools.items()]
        offered = [*named, *calls]
        return [
            c for c in offered if c.recipient.removeprefix("functions.") == tool_choice
        ], "required"
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
    rules = _rules(schema, specs, tool_choice, thinking_budget, max_tokens)
    # The schemas were checked above; the frame around them names tokens by id, which only the
    # worker's tokenizer can check (a bad frame is a bug, reported when the worker builds it).
    import llguidance

    grammar = llguidance.LLMatcher.grammar_from_lark("\n".join(rules))
    closing = _closing(schema, specs, answer_allowed=tool_choice != "required")
    return Constraint(grammar, description=f"harmony, tool_choice={tool_choice}", closing=closing)


def _rules(
    schema: Mapping[str, Any] | None,
    specs: Sequence[CallSpec],
    tool_choice: ToolChoice,
    thinking_budget: int | None,
    max_tokens: int | None,
) -> list[str]:
    """The turn's Lark rules: reasoning messages (at most four, each capped, with a budget),
    then the answer or one of the calls `tool_choice` allows."""
    analysis, preamble = _reasoning_frame("analysis"), _reasoning_frame("commentary")
    budget = f"[max_tokens={thinking_budget}]" if thinking_budget else ""
    repeat = "{0,4}" if thinking_budget else "*"  # with a budget, at most four reasoning messages
    final_body = json_body(schema, max_tokens) if schema is not None else "TEXT"
    answer = f"<[{enc.CHANNEL}]> {_ids('final')} <[{enc.MESSAGE}]> {final_body} <[{enc.RETURN}]>"
    choices = []
    if tool_choice != "required":
        choices.append("answer")
    if tool_choice != "none":
        choices += [f"call_{i}" for i in range(len(specs))]
    if not choices:
        raise SchemaError("tool_choice 'required' needs at least one tool")
    return [
        f"start: (analysis | preamble){repeat} ({' | '.join(choices)})",
        f"analysis: {analysis}",
        f"preamble: {preamble}",
        f"answer: {answer}",
        *(f"call_{i}: {_tool_call(spec)}" for i, spec in enumerate(specs)),
        "TEXT: /(.|\\n)*/",
        f"thought{budget}: /(.|\\n)*/",
    ]


def _closing(
    schema: Mapping[str, Any] | None, specs: Sequence[CallSpec], *, answer_allowed: bool
) -> str:
    """The closer's plan: how to leave reasoning and end the answer or a call in budget."""
    from app.constrain.closing import plan_text  # JSON mode's planner loads with its first turn

    return plan_text(
        generation_schema(schema),
        harmony=True,
        tools={
            s.recipient: generation_schema(s.schema or {"type": "object"})
            for s in specs
            if not s.code
        },
        answer_allowed=answer_allowed,
        frame=_frame(),
    )


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
