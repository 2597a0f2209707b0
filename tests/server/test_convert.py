"""Each API's request converts straight to the app's own `Asked` (no model: the conversion is
pure): the same conversation and `GenerationRequest` as the chat request that asks the same, and
every problem named as the client's own API spells the field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.server.anthropic.convert import asked as from_messages
from app.server.anthropic.wire import CountRequest, MessagesRequest
from app.server.asked import Asked, Target
from app.server.chat.convert import asked as from_chat
from app.server.chat.wire import ChatRequest
from app.server.errors import ApiError, parse
from app.server.responses.convert import asked as from_responses
from app.server.responses.wire import ResponsesRequest
from app.server.routing import Routes
from app.templates.registry import get_template

HARMONY = Target(get_template("harmony"), "m", limit=64)
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
ARGUMENTS = json.dumps({"city": "Bergen"})


def _chat(body: dict[str, Any], target: Target = HARMONY) -> Asked:
    return from_chat(parse(ChatRequest, body), target)


def _messages(body: dict[str, Any], target: Target = HARMONY) -> Asked:
    return from_messages(parse(MessagesRequest, {"max_tokens": 32, **body}), target)


def _responses(body: dict[str, Any], target: Target = HARMONY) -> Asked:
    return from_responses(parse(ResponsesRequest, body), target)


CHAT = {
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Bergen?"},
        {"role": "assistant", "content": "", "reasoning_content": "Look it up.",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": ARGUMENTS}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "7 C"},
        {"role": "user", "content": "And Oslo?"},
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "The weather.", "parameters": WEATHER}}],
    "tool_choice": "required", "max_tokens": 32, "temperature": 0.5, "reasoning_effort": "low",
}


def test_a_messages_request_asks_what_the_same_chat_request_asks() -> None:
    said = _messages({
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": "Weather in Bergen?"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "Look it up.", "signature": "s"},
                                              {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Bergen"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "7 C"},
                                         {"type": "text", "text": "And Oslo?"}]},
        ],
        "tools": [{"name": "get_weather", "description": "The weather.", "input_schema": WEATHER}],
        "tool_choice": {"type": "any"}, "stop_sequences": ["END"], "temperature": 0.5,
        "output_config": {"effort": "low"}, "thinking": {"type": "enabled", "budget_tokens": 20},
    })
    assert said == _chat({**CHAT, "stop": ["END"], "thinking_budget": 20})
    counted = from_messages(parse(CountRequest, {"messages": [{"role": "user", "content": "Hi"}]}), HARMONY)
    assert counted == _chat({"messages": [{"role": "user", "content": "Hi"}]})  # the server's limit, no knobs


def test_a_responses_request_asks_what_the_same_chat_request_asks() -> None:
    said = _responses({
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": "Weather in Bergen?"},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Look it up."}]},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": ARGUMENTS},
            {"type": "function_call_output", "call_id": "c1", "output": "7 C"},
            {"role": "user", "content": [{"type": "input_text", "text": "And Oslo?"}]},
        ],
        "tools": [{"type": "function", "name": "get_weather", "description": "The weather.", "parameters": WEATHER}],
        "tool_choice": "required", "max_output_tokens": 32, "temperature": 0.5, "reasoning": {"effort": "low"},
    })
    assert said == _chat(CHAT)
    form = {"type": "json_schema", "name": "city", "schema": WEATHER}  # `strict` left out: OpenAI's default
    schema = _responses({"input": "Hi", "text": {"format": form}}).generation.response_format
    assert schema is not None and schema.json_schema is not None and schema.json_schema.strict


HI = [{"role": "user", "content": "Hi"}]
DEEP: dict[str, Any] = {"type": "string"}
for _ in range(40):
    DEEP = {"type": "object", "properties": {"a": DEEP}}


@pytest.mark.parametrize(("body", "param"), [
    ({"messages": HI, "stop_sequences": ["a", "b", "c", "d", "e"]}, "stop_sequences"),
    ({"messages": HI, "tools": [{"name": "get weather", "input_schema": WEATHER}]}, "tools.0.name"),
    ({"messages": HI, "tools": [{"name": "f", "input_schema": DEEP}]}, "tools.0.input_schema"),
    ({"messages": HI, "output_config": {"format": {"type": "json_schema", "schema": DEEP}}},
     "output_config.format.schema"),
    ({"messages": HI, "output_config": {"format": {"type": "json_schema", "schema": "x"}}},
     "output_config.format.schema"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "document"}]}]},
     "messages.0.content.1"),
])
def test_a_messages_request_names_the_field_as_anthropic_spells_it(body: dict[str, Any], param: str) -> None:
    with pytest.raises(ApiError) as refused:
        _messages(body)
    assert refused.value.status == 400 and refused.value.param == param, refused.value.message


@pytest.mark.parametrize(("body", "param"), [
    ({"input": [{"role": "robot", "content": "Hi"}]}, "input.0.role"),
    ({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]}, "input.0.arguments"),
    ({"input": [{"type": "function_call_output", "call_id": 7, "output": "1"}]}, "input.0.call_id"),
    ({"input": "Hi", "reasoning": {"effort": "extreme"}}, "reasoning.effort"),
    ({"input": "Hi", "tools": [{"type": "function", "name": None}]}, "tools.0.name"),
    ({"input": "Hi", "tools": [{"type": "function", "name": "f", "parameters": "x"}]}, "tools.0.parameters"),
    ({"input": "Hi", "tool_choice": "sometimes"}, "tool_choice"),
    ({"input": "Hi", "text": {"format": {"type": "json_schema", "name": "a b", "schema": {}}}}, "text.format.name"),
    ({"input": [{"role": "assistant", "content": [{"type": "input_image", "image_url": "data:,"}]}],
      "max_output_tokens": 4}, "input.0.content.0"),
])
def test_a_responses_request_names_the_field_as_the_responses_api_spells_it(body: dict[str, Any], param: str) -> None:
    with pytest.raises(ApiError) as refused:
        _responses(body)
    assert refused.value.status == 400 and refused.value.param == param, refused.value.message


def test_fields_a_model_does_not_apply_are_named_as_each_api_spells_them() -> None:
    plain = Target(get_template("chatml"), "m", limit=64)
    assert _chat({"messages": HI, "reasoning_effort": "low"}, plain).ignored == ("reasoning_effort",)
    assert _messages({"messages": HI, "output_config": {"effort": "max"}}, plain).ignored == ("output_config.effort",)
    assert _responses({"input": "Hi", "reasoning": {"effort": "low"}}, plain).ignored == ("reasoning.effort",)
    blind = Target(get_template("completion"), "m", limit=64)  # no tool-call format
    tool = {"type": "function", "name": "f", "parameters": {}}
    assert _responses({"input": "Hi", "tools": [tool], "tool_choice": "none"}, blind).ignored == ("tools",)
    with pytest.raises(ApiError) as refused:
        _responses({"input": "Hi", "tools": [tool]}, blind)
    assert refused.value.param == "tools" and "no tool-call format" in refused.value.message


def test_a_path_takes_one_route() -> None:
    routes = Routes(1.0)

    async def handler(request: Any) -> Any:
        return None

    routes.post(("/v1/x",), handler)
    with pytest.raises(ValueError, match="/v1/x"):
        routes.get(("/v1/x",), handler)
