"""Tool calls through the local server for a plain-text model: the bundled SmolLM2 (the Hermes
call format) served for real on loopback with the `openai` SDK as its client — `required`, a
named function, streamed and whole, the result handed back, the Responses API — and a model
whose chat template has no call format refusing tools with a 400 that names it, never a 500."""

from __future__ import annotations

import concurrent.futures as cf
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import jsonschema
import openai
import pytest

from tests.server.test_server import _client, _closing, _free_port, _serve

__all__ = ["_closing"]

TIMEZONE = {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}
TOOLS: list[Any] = [{"type": "function", "function": {
    "name": "get_current_time", "description": "The current time in a timezone.", "parameters": TIMEZONE}}]
ASK: list[Any] = [{"role": "user", "content": "What time is it in Tokyo?"}]


@pytest.fixture(scope="module")
def smol(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _serve("default", tmp_path_factory.mktemp("smol-tools"), "--max-tokens", "256")


def _checked(call: Any) -> None:
    assert call.function.name == "get_current_time"
    jsonschema.validate(json.loads(call.function.arguments), TIMEZONE)


def test_required_calls_come_back_as_tool_calls_whole_and_streamed_and_the_result_is_answered(smol: str) -> None:
    client = _client(smol)
    whole = client.chat.completions.create(model="m", messages=ASK, tools=TOOLS, tool_choice="required",
                                           max_tokens=100, temperature=0)
    choice = whole.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    assert choice.message.content is None and choice.message.tool_calls
    call: Any = choice.message.tool_calls[0]
    _checked(call)
    assert call.id.startswith("call_")
    chunks = list(client.chat.completions.create(model="m", messages=ASK, tools=TOOLS, tool_choice="required",
                                                 max_tokens=100, temperature=0, stream=True))
    deltas = [d for c in chunks if c.choices for d in c.choices[0].delta.tool_calls or ()]
    assert deltas and deltas[0].index == 0 and deltas[0].id and deltas[0].id.startswith("call_")
    assert deltas[0].function is not None and deltas[0].function.name == "get_current_time"
    assert deltas[0].function.arguments == call.function.arguments  # the same call (greedy)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["tool_calls"]
    follow = [*ASK, choice.message.model_dump(exclude_none=True),
              {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"time": "14:05"})}]
    for then in ("auto", "none"):  # none: the call's trigger cannot even be written
        answered = client.chat.completions.create(model="m", messages=follow, tools=TOOLS, tool_choice=then,
                                                  max_tokens=120, temperature=0)
        final = answered.choices[0]
        assert final.finish_reason == "stop" and not final.message.tool_calls and final.message.content, then


def test_a_named_function_is_called_and_an_effort_is_ignored_with_a_warning(smol: str) -> None:
    named = _client(smol).chat.completions.with_raw_response.create(
        model="m", messages=ASK, tools=TOOLS, max_tokens=100, temperature=0, reasoning_effort="low",
        tool_choice={"type": "function", "function": {"name": "get_current_time"}})
    choice: Any = named.parse().choices[0]
    assert choice.finish_reason == "tool_calls"
    _checked(choice.message.tool_calls[0])
    assert named.headers["x-harmony-desk-warning"] == "reasoning_effort is not supported: ignored"
    with pytest.raises(openai.BadRequestError) as unknown:
        _client(smol).chat.completions.create(model="m", messages=ASK, tools=TOOLS, max_tokens=10,
                                              tool_choice={"type": "function", "function": {"name": "nope"}})
    assert unknown.value.param == "tool_choice"


def test_the_responses_api_returns_a_function_call_item(smol: str) -> None:
    tool: Any = {"type": "function", "name": "get_current_time", "description": "The current time.",
                 "parameters": TIMEZONE}
    said = _client(smol).responses.create(model="m", input="What time is it in Paris?", tools=[tool],
                                          tool_choice="required", max_output_tokens=100, temperature=0)
    calls = [item for item in said.output if item.type == "function_call"]
    assert said.status == "completed" and calls, said.output
    assert calls[0].name == "get_current_time" and calls[0].call_id.startswith("call_")
    jsonschema.validate(json.loads(calls[0].arguments), TIMEZONE)


@pytest.fixture(scope="module")
def no_calls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server whose model's template (`completion`) has no call format; no weights are
    loaded: a request refused before it is queued never reaches the engine."""
    import uvicorn

    from app.server.app import make_app
    from app.server.options import ServeOptions
    from app.server.served import ServedModel
    from app.templates.registry import get_template

    def session(*_: Any) -> Any:
        raise AssertionError("a refused request reached the model")

    engine = cf.ThreadPoolExecutor(max_workers=1)
    served = ServedModel(name="base-model-270m", engine=engine, session=session,
                         template=get_template("completion"), n_ctx=2048)
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(make_app(served, ServeOptions(port=port)), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(5)
    engine.shutdown()


def test_a_template_without_a_call_format_refuses_tools_naming_the_model(no_calls: str) -> None:
    client = _client(no_calls)
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(model="m", messages=ASK, tools=TOOLS, stream=stream)
        assert refused.value.status_code == 400 and refused.value.param == "tools"
        assert "base-model-270m" in refused.value.message and "no tool-call format" in refused.value.message
    tool: Any = {"type": "function", "name": "get_current_time", "parameters": TIMEZONE}
    with pytest.raises(openai.BadRequestError, match="base-model-270m"):
        client.responses.create(model="m", input="What time is it?", tools=[tool])

