"""What `harmony-desk serve` really sends, validated against OpenAI's published OpenAPI schemas.

The schemas are vendored (`tests/fixtures/openai_openapi/`, cut from openai/openai-openapi by
its `extract.py`; nothing is fetched at run time). OpenAPI 3.1 schemas are JSON Schema 2020-12;
`#/components/schemas/...` references resolve in a `referencing` registry that holds the cut
document (OpenAPI 3.0's `nullable: true`, still in parts of it, read as "or null"). Every
object is checked whole (all its violations reported, not the first): chat
completions and every streamed chunk (with logprobs, usage, tools), legacy completions,
Responses objects and every streamed event (a stream cut by `max_output_tokens` too),
`/v1/models`, embeddings, and the error bodies of 400, 401, 404, 405, 413 and 415. Then the
routes llama-server's clients call (`/health`, the paths without `/v1`), a body nested 100,000
deep (a 400 that states the limit, on every route), and `tools` with `tool_choice: "none"` on a
model that has no tool-call format (a plain answer).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from tests.keys.test_endpoints import secret_service
from tests.server.test_server import TOOLS, _serve, oss, smol

SCHEMAS = Path(__file__).resolve().parents[1] / "fixtures" / "openai_openapi" / "schemas.json"
BASE = "urn:openai-openapi"
__all__ = ["oss", "secret_service", "smol"]
ASK = [{"role": "user", "content": "Count from one to five in words."}]
FUNCTION = {"type": "function", "name": "get_weather", "description": "The weather.",
            "parameters": TOOLS[0]["function"]["parameters"]}  # type: ignore[index]


def _nullable(value: Any) -> Any:
    """`value` with OpenAPI 3.0's `nullable: true` (which some of the document still uses, and
    JSON Schema does not know) said in JSON Schema: null is one more allowed value."""
    if isinstance(value, list):
        return [_nullable(v) for v in value]
    if not isinstance(value, dict):
        return value
    said = {k: _nullable(v) for k, v in value.items() if k != "nullable"}
    if value.get("nullable") is not True:
        return said
    if isinstance(said.get("type"), str) and "enum" not in said:
        return {**said, "type": [said["type"], "null"]}
    return {"anyOf": [said, {"type": "null"}]}


@cache
def _document() -> dict[str, Any]:
    return _nullable(json.loads(SCHEMAS.read_text(encoding="utf-8")))  # type: ignore[no-any-return]


@cache
def _validator(name: str) -> Draft202012Validator:
    registry: Registry[Any] = Registry().with_resource(
        BASE, Resource.from_contents(_document(), default_specification=DRAFT202012))
    return Draft202012Validator({"$ref": f"{BASE}#/components/schemas/{name}"}, registry=registry)


@cache
def _event_schemas() -> dict[str, str]:
    """Each Responses stream event's `type` → the name of its schema."""
    schemas = _document()["components"]["schemas"]
    kinds = {}
    for variant in schemas["ResponseStreamEvent"]["anyOf"]:
        name = variant["$ref"].rsplit("/", 1)[1]
        spelled = schemas[name]["properties"]["type"]
        for kind in spelled.get("enum", [spelled.get("const")]):
            kinds[kind] = name
    return kinds


def violations(name: str, instance: Any) -> list[str]:
    """Every way `instance` fails schema `name` (path: message)."""
    return [f"{name} {'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in _validator(name).iter_errors(instance)]


def event_violations(event: dict[str, Any]) -> list[str]:
    name = _event_schemas().get(event.get("type", ""))
    return violations(name, event) if name else [f"no schema for event type {event.get('type')!r}"]


def _sse(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    data = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    return [json.loads(d) for d in data if d != "[DONE]"]


def _post(base: str, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{base}{path}", json=body, timeout=120)


def test_the_vendored_schemas_are_whole() -> None:
    schemas = _document()["components"]["schemas"]
    refs = {m for m in json.dumps(schemas).split('"') if m.startswith("#/components/schemas/")}
    assert {r.rsplit("/", 1)[1] for r in refs} <= set(schemas)  # every reference resolves
    assert "response.incomplete" in _event_schemas() and "response.output_text.delta" in _event_schemas()
    assert violations("ErrorResponse", {"error": {"message": "m", "type": "t"}})  # the check can fail
    delta = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
             "choices": [{"index": 0, "delta": {}, "finish_reason": None, "logprobs": None}]}
    assert violations("CreateChatCompletionStreamResponse", delta) == []  # `nullable` is read
    assert violations("CreateChatCompletionStreamResponse", {**delta, "choices": [
        {"index": 0, "delta": {}, "finish_reason": "done", "logprobs": None}]})


def test_chat_completions_whole_and_streamed_with_logprobs_and_usage(smol: str) -> None:
    body = {"messages": ASK, "max_tokens": 12, "temperature": 0, "logprobs": True, "top_logprobs": 2}
    whole = _post(smol, "/v1/chat/completions", body).json()
    assert violations("CreateChatCompletionResponse", whole) == []
    assert whole["system_fingerprint"] and whole["choices"][0]["message"]["refusal"] is None
    chunks = _sse(_post(smol, "/v1/chat/completions",
                        {**body, "stream": True, "stream_options": {"include_usage": True}}))
    assert len(chunks) > 3 and chunks[-1]["usage"]["completion_tokens"] > 0
    assert [v for c in chunks for v in violations("CreateChatCompletionStreamResponse", c)] == []
    assert all(c["system_fingerprint"] == whole["system_fingerprint"] for c in chunks)
    several = _post(smol, "/v1/chat/completions", {**body, "n": 2, "seed": 1}).json()
    assert violations("CreateChatCompletionResponse", several) == []


def test_chat_completions_with_tools_whole_and_streamed(oss: str) -> None:
    body = {"messages": [{"role": "user", "content": "Weather in Oslo?"}], "tools": TOOLS, "seed": 3,
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}}, "max_tokens": 300}
    whole = _post(oss, "/v1/chat/completions", body).json()
    assert whole["choices"][0]["finish_reason"] == "tool_calls", whole
    assert violations("CreateChatCompletionResponse", whole) == []
    chunks = _sse(_post(oss, "/v1/chat/completions", {**body, "stream": True}))
    assert any(c["choices"] and c["choices"][0]["delta"].get("tool_calls") for c in chunks)
    assert [v for c in chunks for v in violations("CreateChatCompletionStreamResponse", c)] == []


def test_legacy_completions_whole_and_streamed(smol: str) -> None:
    body = {"prompt": "One, two,", "max_tokens": 6, "temperature": 0}
    whole = _post(smol, "/v1/completions", body).json()
    assert violations("CreateCompletionResponse", whole) == []
    chunks = _sse(_post(smol, "/v1/completions", {**body, "stream": True}))
    assert len(chunks) > 2 and chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length")
    # a streamed completion chunk has the whole object's shape (the spec has no chunk schema),
    # but for its finish_reason: null until the last, as OpenAI's own stream sends it
    chunks = [{**c, "choices": [{**c["choices"][0], "finish_reason": c["choices"][0]["finish_reason"] or "stop"}]}
              for c in chunks]
    assert [v for c in chunks for v in violations("CreateCompletionResponse", c)] == []


def test_responses_whole_and_streamed_with_a_function_call(oss: str) -> None:
    asked = {"input": "Weather in Bergen?", "tools": [FUNCTION], "max_output_tokens": 300,
             "tool_choice": {"type": "function", "name": "get_weather"}, "reasoning": {"effort": "low"}}
    whole = _post(oss, "/v1/responses", asked).json()
    assert any(item["type"] == "function_call" for item in whole["output"]), whole
    assert violations("Response", whole) == []
    plain = _post(oss, "/v1/responses", {"input": "Hi", "max_output_tokens": 300, "temperature": 0.5}).json()
    assert violations("Response", plain) == [] and plain["temperature"] == 0.5
    for body in (asked, {"input": "Hi", "max_output_tokens": 300}):
        events = _sse(_post(oss, "/v1/responses", {**body, "stream": True}))
        assert [v for e in events for v in event_violations(e)] == []
        assert events[-1]["type"] in ("response.completed", "response.incomplete")


def test_a_responses_stream_cut_by_max_output_tokens_ends_incomplete(oss: str) -> None:
    body = {"input": "Write a long story.", "max_output_tokens": 16}
    whole = _post(oss, "/v1/responses", body).json()
    assert violations("Response", whole) == []
    assert whole["status"] == "incomplete" and whole["incomplete_details"] == {"reason": "max_output_tokens"}
    events = _sse(_post(oss, "/v1/responses", {**body, "stream": True}))
    assert [v for e in events for v in event_violations(e)] == []
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "response.incomplete" and "response.completed" not in kinds
    done = events[-1]["response"]
    assert done["status"] == "incomplete" and done["incomplete_details"] == {"reason": "max_output_tokens"}


def test_responses_text_with_logprobs_in_the_object_and_the_events(smol: str) -> None:
    body = {"input": "Say hello.", "max_output_tokens": 8, "temperature": 0}
    whole = _post(smol, "/v1/responses", body).json()
    assert violations("Response", whole) == []
    text = next(i for i in whole["output"] if i["type"] == "message")["content"][0]
    assert text["type"] == "output_text" and text["logprobs"] == []
    events = _sse(_post(smol, "/v1/responses", {**body, "stream": True}))
    assert [v for e in events for v in event_violations(e)] == []


def test_models_list(smol: str) -> None:
    listed = httpx.get(f"{smol}/v1/models", timeout=10).json()
    assert violations("ListModelsResponse", listed) == []
    assert [violations("Model", m) for m in listed["data"]] == [[] for _ in listed["data"]]


@pytest.mark.parametrize(("method", "path", "content", "headers", "status"), [
    ("POST", "/v1/chat/completions", b"{not json", {"content-type": "application/json"}, 400),
    ("GET", "/v1/nothing-here", b"", {}, 404),
    ("POST", "/v1/nothing-here", b"{}", {"content-type": "application/json"}, 404),
    ("GET", "/", b"", {}, 404),
    ("GET", "/v1/chat/completions", b"", {}, 405),
    ("DELETE", "/v1/models", b"", {}, 405),
    ("POST", "/v1/models", b"{}", {"content-type": "application/json"}, 405),
    ("POST", "/v1/chat/completions", b"x" * (9 * 1024 * 1024), {"content-type": "application/json"}, 413),
    ("POST", "/v1/chat/completions", b"{}", {"content-type": "text/plain"}, 415),
])
def test_error_bodies_are_openai_error_objects(smol: str, method: str, path: str, content: bytes,
                                               headers: dict[str, str], status: int) -> None:
    answer = httpx.request(method, f"{smol}{path}", content=content, headers=headers, timeout=60)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    assert violations("ErrorResponse", answer.json()) == []
    assert answer.json()["error"]["message"]


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory, secret_service: dict[str, str]) -> Iterator[str]:
    """A server that asks for a token (kept in the test run's private keyring)."""
    yield from _serve("default", tmp_path_factory.mktemp("keyed"), "--require-token", "--max-tokens", "16")


def test_a_401_and_a_413_sent_in_chunks_are_openai_error_objects(keyed: str, smol: str) -> None:
    for path in ("/v1/models", "/v1/chat/completions", "/health", "/nothing"):
        refused = httpx.post(f"{keyed}{path}", json={}, timeout=10)
        assert refused.status_code == 401 and violations("ErrorResponse", refused.json()) == []
        assert refused.json()["error"]["code"] == "invalid_api_key"

    def chunks() -> Iterator[bytes]:  # no Content-Length: the size is found as it comes
        yield b'{"messages": "'
        for _ in range(9):
            yield b"x" * 1024 * 1024

    huge = httpx.post(f"{smol}/v1/chat/completions", content=chunks(), timeout=60,
                      headers={"content-type": "application/json"})
    assert huge.status_code == 413 and violations("ErrorResponse", huge.json()) == []


def test_embeddings(smol: str) -> None:
    listed = httpx.get(f"{smol}/v1/models", timeout=10).json()["data"]
    if len(listed) < 2:
        pytest.skip("this server lists no embedding model")
    answer = _post(smol, "/v1/embeddings", {"model": listed[1]["id"], "input": ["a", "b"]})
    assert answer.status_code == 200, answer.text
    assert violations("CreateEmbeddingResponse", answer.json()) == []  # (base64: the schema has no form)


# The routes llama-server's clients call, and the boundary's refusals


def test_health_and_the_unprefixed_paths(smol: str) -> None:
    health = httpx.get(f"{smol}/health", timeout=10)
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    assert violations("ListModelsResponse", httpx.get(f"{smol}/models", timeout=10).json()) == []
    chat = _post(smol, "/chat/completions", {"messages": ASK, "max_tokens": 4}).json()
    assert violations("CreateChatCompletionResponse", chat) == []
    completion = _post(smol, "/completions", {"prompt": "One,", "max_tokens": 4}).json()
    assert violations("CreateCompletionResponse", completion) == []
    response = _post(smol, "/responses", {"input": "Hi", "max_output_tokens": 4}).json()
    assert violations("Response", response) == []


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/chat/completions", "/v1/completions", "/completions",
                                  "/v1/responses", "/responses", "/v1/embeddings"])
def test_a_body_nested_100000_deep_is_a_400_that_states_the_limit(smol: str, path: str) -> None:
    from app.server.intake import MAX_DEPTH

    deep = 100_000
    for raw in (b"[" * deep + b"]" * deep, b'{"messages": ' + b'{"a":' * deep + b"1" + b"}" * deep + b"}",
                b"[" * deep):  # unclosed too
        answer = httpx.post(f"{smol}{path}", content=raw, headers={"content-type": "application/json"}, timeout=60)
        assert answer.status_code == 400, answer.text
        assert violations("ErrorResponse", answer.json()) == []
        error = answer.json()["error"]
        assert error["code"] == "nested_too_deep" and f"{MAX_DEPTH} levels" in error["message"]
    inside = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "[" * deep + "]" * deep}}]}]}
    if "chat" in path:  # deep JSON inside a string is text, read as text: never a 500
        assert _post(smol, path, inside).status_code == 400


@pytest.fixture(scope="module")
def no_calls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """SmolLM2 under a template with no tool-call format (a choice `serve` remembers for the model:
    in a config folder of its own, so no other server of this run gets it)."""
    tmp = tmp_path_factory.mktemp("plain")
    serving = _serve("default", tmp, "--template", "completion", "--max-tokens", "64")
    shared = os.environ["HARMONY_DESK_CONFIG"]
    os.environ["HARMONY_DESK_CONFIG"] = str(tmp / "config")
    try:
        base = next(serving)  # started (and its environment read) here
    finally:
        os.environ["HARMONY_DESK_CONFIG"] = shared
    yield base
    serving.close()


def test_tools_with_tool_choice_none_on_a_model_without_tool_calls(no_calls: str) -> None:
    """Agent clients send their tool list always: with tool_choice none it is plain chat."""
    body = {"messages": ASK, "max_tokens": 6, "tools": TOOLS, "tool_choice": "none", "temperature": 0}
    answer = _post(no_calls, "/v1/chat/completions", body)
    assert answer.status_code == 200, answer.text
    assert violations("CreateChatCompletionResponse", answer.json()) == []
    message = answer.json()["choices"][0]["message"]
    assert message["content"] and "tool_calls" not in message
    assert answer.headers["x-harmony-desk-warning"] == "tools is not supported: ignored"  # said
    chunks = _sse(_post(no_calls, "/v1/chat/completions", {**body, "stream": True}))
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == message["content"]
    responses = {"input": "Hi", "max_output_tokens": 6, "tools": [FUNCTION], "tool_choice": "none"}
    assert violations("Response", _post(no_calls, "/v1/responses", responses).json()) == []
    refused = _post(no_calls, "/v1/chat/completions", {**body, "tool_choice": "auto"})
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "tools"  # it cannot call
