"""The parts behind a tool schema that never fails a turn: a recursion no value can end is told
from one that can; an MCP schema is closed only where an object stands alone (never an `allOf`
part, never values); arguments are checked against the server's schema unless jsonschema cannot
read it; and the turn loop sends a call that does not fit back for one repair, then says it was
not repaired."""

from __future__ import annotations

import json
from typing import Any

from jsonschema import validators

from app.constrain.finite import unfinishable
from app.domain.events import TurnResult
from app.domain.messages import Conversation, Message, Role
from app.engine.turn.call_repair import REPAIRS
from app.engine.turn.loop import Generate, Generated, RunCalls, turn_loop
from app.tools.builtin.everyday import calculate
from app.tools.calls import allow_all
from app.tools.mcp.schemas import closed, misfit, shown
from app.tools.registry import ToolRegistry
from app.tools.runner import run_calls


def _node(required: list[str], tail: dict[str, Any]) -> dict[str, Any]:
    return {"$defs": {"N": {"type": "object", "properties": {"next": tail}, "required": required}},
            "type": "object", "properties": {"n": {"$ref": "#/$defs/N"}}, "required": ["n"]}


def test_a_recursion_every_value_must_take_is_told_from_one_that_can_end() -> None:
    assert "#/$defs/N" in unfinishable(_node(["next"], {"$ref": "#/$defs/N"}))
    assert unfinishable(_node([], {"$ref": "#/$defs/N"})) == ""  # `next` may be left out
    assert unfinishable(_node(["next"], {"anyOf": [{"$ref": "#/$defs/N"}, {"type": "null"}]})) == ""
    assert unfinishable(_node(["next"], {"type": "array", "items": {"$ref": "#/$defs/N"}})) == ""  # []
    assert "#/$defs/N" in unfinishable(_node(["next"], {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/N"}}))
    assert unfinishable({"type": "object", "properties": {"a": {"type": "string"}}}) == ""


def test_only_objects_that_stand_alone_are_closed() -> None:
    parts = {"type": "object", "allOf": [{"properties": {"a": {"type": "string"}}}, {"properties": {"b": {"type": "integer"}}}]}
    assert closed(parts) == parts  # closing each part would refuse every object with a or b
    beside = {"type": "object", "properties": {"kind": {"type": "string"}},
              "anyOf": [{"properties": {"x": {"type": "number"}}}, {"properties": {"y": {"type": "number"}}}]}
    assert closed(beside) == beside
    union: dict[str, Any] = {"anyOf": [{"type": "object", "properties": {"x": {"type": "number"}}}]}
    assert closed(union)["anyOf"][0]["additionalProperties"] is False  # a branch on its own
    values: dict[str, Any] = {"type": "object", "properties": {"p": {"default": {"properties": {}}, "not": {"properties": {"q": {}}}}}}
    out = closed(values)
    assert out["additionalProperties"] is False and out["properties"]["p"] == values["properties"]["p"]
    value: dict[str, Any] = {"a": "x", "b": 2}
    assert validators.validator_for(shown(parts))(shown(parts)).is_valid(value)


def test_arguments_are_checked_unless_the_schema_cannot_be_read() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}, "required": ["n"]}
    assert misfit(schema, {"n": 2}) == ""
    assert misfit(schema, {"n": 9}) == "/n: 9 is greater than the maximum of 3"
    broken = {"type": "object", "properties": {"n": {"$ref": "#/$defs/Gone"}}}
    assert misfit(broken, {"n": "anything"}) == ""  # the server judges what it cannot say itself


def _call(arguments: dict[str, Any]) -> Message:
    return Message.of(Role.ASSISTANT, json.dumps(arguments), channel="commentary",
                      recipient="functions.calculate", content_type="<|constrain|>json")


def _drive(script: list[Message]) -> TurnResult:
    loop = turn_loop(Conversation(messages=(Message.of(Role.USER, "Go"),)), ToolRegistry([calculate]))
    action = next(loop)
    try:
        while True:
            if isinstance(action, Generate):
                produced = script.pop(0)
                action = loop.send(Generated((produced,), produced.recipient is not None))
            else:
                assert isinstance(action, RunCalls)
                action = loop.send(run_calls(action.calls, approve=allow_all))
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


def test_a_call_that_does_not_fit_is_sent_back_for_one_repair() -> None:
    done = Message.of(Role.ASSISTANT, "4", channel="final")
    result = _drive([_call({"expr": "1"}), _call({"expr": "2"}), _call({"expression": "2+2"}), done])
    first, second, third = (json.loads(m.text) for m in result.conversation.messages if m.author.role is Role.TOOL)
    assert REPAIRS == 1
    assert first["error"]["message"].startswith("invalid arguments for functions.calculate: /expression: Field required")
    assert first["error"]["message"].endswith("Call functions.calculate once more with arguments that fit its schema.")
    assert "validation error for" not in first["error"]["message"]  # no library preamble
    assert "not repaired: do not call functions.calculate again" in second["error"]["message"]
    assert third["ok"] and result.reason == "answer"
    said = "invalid arguments for functions.calculate: /expression: Field required; /expr: Extra inputs are not permitted"
    assert result.records[0].outcome.error == said  # the audit keeps what the check said
