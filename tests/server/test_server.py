"""The local OpenAI-compatible server, run for real (`harmony-desk serve` on loopback) with the
`openai` SDK as its client — sync and async, streamed and whole — on the bundled default model
(SmolLM2) and on the tiny gpt-oss: chat, tools round trip, JSON answers that validate, reasoning
never in the content, errors in OpenAI's shape, the guard, cancellation by disconnect, order."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import jsonschema
import openai
import pytest

from tests.keys.test_endpoints import secret_service
from tests.turns import tool_turn

ROOT = Path(__file__).resolve().parents[2]
WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                            "unit": {"enum": ["C", "F"]}},
           "required": ["city", "unit"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                                           "parameters": WEATHER}}]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


__all__ = ["secret_service"]


def _serve(model: str, tmp: Path, *extra: str, cache: Path | None = None) -> Generator[str, None, None]:
    """A `serve` process on `model` ("default": the bundled SmolLM2), its history under `tmp`
    and its cache folder `cache` (else one of its own under `tmp`: no server restores a prompt
    another test's server kept)."""
    from app.library.bundled import default_model_path

    port = _free_port()
    model = str(default_model_path()) if model == "default" else model
    env = {**os.environ, "HARMONY_DESK_DATA": str(tmp / "data"), "HARMONY_DESK_CACHE": str(cache or tmp / "cache")}
    log = (tmp / f"serve-{port}.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "app", "serve", "--model", model, "--port", str(port),
                             "--threads", "1", "--ctx", "2048", *extra],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert proc.poll() is None, (tmp / f"serve-{port}.log").read_text()
            try:
                if httpx.get(f"{base}/v1/models", timeout=2).status_code in (200, 401):
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def smol(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _serve("default", tmp_path_factory.mktemp("smol"), "--max-tokens", "256")


@pytest.fixture(scope="module")
def oss(tmp_path_factory: pytest.TempPathFactory, tiny_model: Any) -> Iterator[str]:
    yield from _serve(str(tiny_model), tmp_path_factory.mktemp("oss"), "--max-tokens", "400",
                      "--thinking-budget", "8")


_CLIENTS: dict[str, openai.OpenAI] = {}


def _client(base: str) -> openai.OpenAI:
    """One SDK client per server, closed when the module's tests end."""
    if base not in _CLIENTS:
        _CLIENTS[base] = openai.OpenAI(base_url=f"{base}/v1", api_key="none", max_retries=0)
    return _CLIENTS[base]


@pytest.fixture(scope="module", autouse=True)
def _closing() -> Iterator[None]:
    yield
    for client in _CLIENTS.values():
        client.close()
    _CLIENTS.clear()


def left_midway(base: str, path: str, body: dict[str, Any], lines: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The server's status before a client streams `body` and goes away after `lines` lines,
    and once it has counted a generation stopped (or 60 s later)."""
    before = httpx.get(f"{base}/harmony-desk/status").json()
    with httpx.stream("POST", f"{base}{path}", timeout=60, json=body) as leaving:
        for n, _line in enumerate(leaving.iter_lines()):
            if n > lines:
                break  # the client goes away mid-answer
    deadline = time.monotonic() + 60
    after = before
    while time.monotonic() < deadline and after["stopped"] == before["stopped"]:
        time.sleep(0.2)
        after = httpx.get(f"{base}/harmony-desk/status").json()
    return before, after


def test_chat_whole_and_streamed_on_the_default_model(smol: str) -> None:
    client = _client(smol)
    models = client.models.list().data
    assert [m.id for m in models][1] == "wordllama-l2-supercat-256"  # the chat model, then the embedding one
    assert all((m.model_extra or {})["status"] == {"value": "unloaded"} for m in models[2:])  # the library's
    assert "SmolLM2" in models[0].id
    ask = [{"role": "system", "content": "You are brief."}, {"role": "user", "content": "Say hello."}]
    whole = client.chat.completions.create(model=models[0].id, messages=ask, max_tokens=24, seed=7, temperature=0)
    text = whole.choices[0].message.content
    assert text and whole.choices[0].finish_reason in ("stop", "length")
    assert whole.usage is not None and whole.usage.prompt_tokens > 5 and 0 < whole.usage.completion_tokens <= 24
    chunks = list(client.chat.completions.create(model="any", messages=ask, max_tokens=24, seed=7,
                                                 temperature=0, stream=True,
                                                 stream_options={"include_usage": True}))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == text  # the same text, whole or streamed (greedy)
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == [whole.choices[0].finish_reason]


def test_async_client_stop_sequences_logprobs_and_json_mode(smol: str) -> None:
    async def run() -> Any:
        async with openai.AsyncOpenAI(base_url=f"{smol}/v1", api_key="none", max_retries=0) as client:
            return await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "Count from one to ten in words."}],
                max_tokens=40, temperature=0, logprobs=True, top_logprobs=2)

    counted = asyncio.run(run())
    content = counted.choices[0].message.content
    entries = counted.choices[0].logprobs.content
    assert "".join(e.token for e in entries) == content  # the answer's own tokens, no template text
    assert all(len(e.top_logprobs) == 2 and e.logprob <= 0 for e in entries)
    word = content.split()[2] if len(content.split()) > 3 else content[:3]
    client = _client(smol)
    cut = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Count from one to ten in words."}],
                                         max_tokens=40, temperature=0, stop=[word])
    assert cut.choices[0].message.content == content[: content.index(word)]
    assert cut.choices[0].finish_reason == "stop"
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                               "age": {"type": "integer", "minimum": 0, "maximum": 120}},
              "required": ["name", "age"], "additionalProperties": False}
    answer = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Invent a person."}], max_tokens=60, seed=1,
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": schema}})
    jsonschema.validate(json.loads(answer.choices[0].message.content), schema)
    cut = httpx.post(f"{smol}/v1/chat/completions", timeout=60, json={
        "messages": [{"role": "user", "content": "Invent a person."}], "max_tokens": 3, "seed": 1,
        "response_format": {"type": "json_schema", "json_schema": {"name": "person", "schema": schema}}})
    assert cut.json()["choices"][0]["finish_reason"] == "length"
    assert "E-STREAM-TRUNCATED" in cut.headers["x-harmony-desk-warning"]  # said, not passed off as valid


def test_raw_completions_echo_and_the_suffix_warning(smol: str) -> None:
    raw = httpx.post(f"{smol}/v1/completions", json={"prompt": "The capital of France is", "max_tokens": 5,
                                                     "temperature": 0, "echo": True, "suffix": "!"}, timeout=60)
    assert raw.status_code == 200 and raw.headers["x-harmony-desk-warning"] == "suffix is not supported: ignored"
    penalised = httpx.post(f"{smol}/v1/chat/completions", timeout=60, json={
        "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, "presence_penalty": 0.5,
        "logit_bias": {"1": 5}})
    assert penalised.headers["x-harmony-desk-warning"] == "presence_penalty, logit_bias are not supported: ignored"
    body = raw.json()
    assert body["object"] == "text_completion" and body["choices"][0]["text"].startswith("The capital of France is")
    sdk = _client(smol).completions.create(model="m", prompt="One, two,", max_tokens=4, temperature=0)
    assert sdk.choices[0].text and sdk.usage.completion_tokens <= 4


@pytest.mark.parametrize(("body", "status", "code", "param"), [
    ("{not json", 400, "invalid_json", None),
    ({"messages": [{"role": "user", "content": "hi"}], "temprature": 1}, 400, "unknown_field", "temprature"),
    ({"messages": [{"role": "user", "content": "hi"}], "n": 9}, 400, "invalid_value", "n"),
    ({"messages": []}, 400, "invalid_value", "messages"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}, 400,
     "unsupported_content", "messages.0.content.0"),
    ({"messages": [{"role": "user", "content": "word " * 3000}]}, 400, "context_length_exceeded", "messages"),
    ({"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}}}},
     400, "unsupported_schema", "response_format"),
])
def test_bad_requests_are_errors_in_openais_shape(smol: str, body: Any, status: int, code: str, param: str | None) -> None:
    raw = body if isinstance(body, str) else json.dumps(body)
    answer = httpx.post(f"{smol}/v1/chat/completions", content=raw, headers={"content-type": "application/json"},
                        timeout=60)
    error = answer.json()["error"]
    assert answer.status_code == status and error["code"] == code and error["param"] == param, error
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    with pytest.raises(openai.BadRequestError):  # the SDK reads it as the error it is
        _client(smol).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], n=9)


def test_n_three_gives_three_choices_decoded_side_by_side(smol: str) -> None:
    asked = [{"role": "user", "content": "Write one sentence about the sea."}]
    whole = _client(smol).chat.completions.create(model="m", messages=asked, n=3, max_tokens=12,  # type: ignore[arg-type]
                                                  temperature=1.0, seed=7)
    assert [c.index for c in whole.choices] == [0, 1, 2]
    texts = [c.message.content for c in whole.choices]
    assert all(texts) and len(set(texts)) > 1, texts  # seeds 7, 8, 9: not one answer thrice
    assert whole.usage is not None and whole.usage.completion_tokens >= 3
    again = _client(smol).chat.completions.create(model="m", messages=asked, n=3, max_tokens=12,  # type: ignore[arg-type]
                                                  temperature=1.0, seed=7)
    assert [c.message.content for c in again.choices] == texts  # the same seeds, the same choices
    streamed: dict[int, str] = {}
    ids = set()
    for chunk in _client(smol).chat.completions.create(model="m", messages=asked, n=3, max_tokens=12,  # type: ignore[arg-type,call-overload]
                                                       temperature=1.0, seed=7, stream=True):
        ids.add(chunk.id)
        for choice in chunk.choices:
            streamed[choice.index] = streamed.get(choice.index, "") + (choice.delta.content or "")
    assert [streamed[i] for i in range(3)] == texts and len(ids) == 1
    status = httpx.get(f"{smol}/harmony-desk/status", timeout=10).json()
    assert status["sequences"]["total"] == 4 and status["sequences"]["queued"] == 0


def test_the_guard_host_size_and_embeddings(smol: str) -> None:
    rebinding = httpx.get(f"{smol}/v1/models", headers={"host": "attacker.example:80"})
    assert rebinding.status_code == 403 and rebinding.json()["error"]["code"] == "host_not_allowed"
    huge = httpx.post(f"{smol}/v1/chat/completions", content=b"x" * (9 * 1024 * 1024), timeout=60)
    assert huge.status_code == 413 and huge.json()["error"]["code"] == "request_too_large"
    assert "access-control-allow-origin" not in httpx.get(f"{smol}/v1/models", headers={"origin": "http://evil"}).headers
    chat_model = _client(smol).models.list().data[0].id  # embeddings: tests/server/test_embeddings.py
    with pytest.raises(openai.BadRequestError) as refused:
        _client(smol).embeddings.create(model=chat_model, input="hello")
    assert refused.value.code == "model_cannot_embed"
    databricks = httpx.post(f"{smol}/serving-endpoints/chat/invocations", timeout=60,
                            json={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5})
    assert databricks.status_code == 200 and databricks.json()["object"] == "chat.completion"
    with openai.OpenAI(base_url=f"{smol}/serving-endpoints", api_key="dapi-none", max_retries=0) as via_sdk:
        assert via_sdk.chat.completions.create(model="my-endpoint", messages=[{"role": "user", "content": "Hi"}],
                                               max_tokens=5).choices[0].message.content is not None


def test_two_clients_are_served_side_by_side_and_a_disconnect_stops_the_generation(smol: str) -> None:
    times: dict[str, list[float]] = {"a": [], "b": []}
    texts = {"a": "", "b": ""}
    began = threading.Event()

    def stream(name: str) -> None:
        for chunk in _client(smol).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "Tell me a long story about a fox."}],
                max_tokens=60, temperature=0, stream=True):
            if chunk.choices and chunk.choices[0].delta.content:
                times[name].append(time.monotonic())
                texts[name] += chunk.choices[0].delta.content
                began.set()

    first = threading.Thread(target=stream, args=("a",))
    first.start()
    assert began.wait(60)  # a asked first, and is answering (not a fixed sleep: a fast machine ends it)
    second = threading.Thread(target=stream, args=("b",))
    second.start()
    first.join(120)
    second.join(120)
    assert times["a"] and times["b"] and times["b"][0] < times["a"][-1]  # b did not wait for a
    assert texts["a"] == texts["b"]  # decoded beside each other, the same greedy answer
    before, after = left_midway(smol, "/v1/chat/completions", {
        "messages": [{"role": "user", "content": "Write a very long essay about rivers."}],
        "max_tokens": 256, "temperature": 0, "stream": True}, lines=6)
    assert after["stopped"] == before["stopped"] + 1  # the generation was cancelled, not finished
    assert after["generated"] - before["generated"] < 256


def test_gpt_oss_tools_round_trip_with_reasoning_kept_out_of_the_content(oss: str) -> None:
    client = _client(oss)
    ask: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Oslo?"}]
    called = client.chat.completions.create(model="m", messages=ask, tools=TOOLS,  # type: ignore[arg-type]
                                            tool_choice={"type": "function", "function": {"name": "get_weather"}},
                                            max_tokens=300, seed=3, extra_body={"reasoning_format": "reasoning"})
    choice = called.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    call = choice.message.tool_calls[0]
    assert call.function.name == "get_weather"
    jsonschema.validate(json.loads(call.function.arguments), WEATHER)
    said = choice.message.model_extra or {}
    assert "reasoning_content" not in said  # asked for `reasoning`
    reasoning = said.get("reasoning") or ""
    assert "<|channel|>" not in (choice.message.content or "") + reasoning
    ask += [choice.message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temp": 4, "sky": "rain"})}]
    answered = client.chat.completions.create(model="m", messages=ask, tools=TOOLS, max_tokens=300,  # type: ignore[arg-type]
                                              seed=3, tool_choice="none")
    final = answered.choices[0]
    assert final.finish_reason in ("stop", "length") and not final.message.tool_calls
    thought = (final.message.model_extra or {}).get("reasoning_content") or ""
    if thought and final.message.content:  # what is reasoning is never in the content, and back
        assert thought not in final.message.content and final.message.content not in thought
    assert "<|" not in (final.message.content or "")


def test_gpt_oss_json_schema_answers_validate_whole_and_streamed(oss: str) -> None:
    client = _client(oss)
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer", "minimum": 0, "maximum": 9}},
              "required": ["ok", "n"], "additionalProperties": False}
    form = {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}
    for seed in (1, 2):
        whole = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Answer."}],
                                               response_format=form, max_tokens=400, seed=seed,  # type: ignore[arg-type]
                                               extra_body={"reasoning_effort": "low"})
        if whole.choices[0].finish_reason == "stop":
            jsonschema.validate(json.loads(whole.choices[0].message.content), schema)
    chunks = list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Answer."}],
                                                 response_format=form, max_tokens=400, seed=1, stream=True))  # type: ignore[arg-type]
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    if finish == ["stop"]:
        jsonschema.validate(json.loads(content), schema)
    reasoning = "".join((c.choices[0].delta.model_extra or {}).get("reasoning_content") or ""
                        for c in chunks if c.choices)
    assert reasoning == "" or reasoning not in content


def test_the_responses_api_with_a_function_call_and_its_output(oss: str) -> None:
    client = _client(oss)
    tool = {"type": "function", "name": "get_weather", "description": "The weather.", "parameters": WEATHER}
    first = client.responses.create(model="m", input="Weather in Bergen?", tools=[tool],  # type: ignore[list-item]
                                    tool_choice={"type": "function", "name": "get_weather"}, max_output_tokens=300,
                                    reasoning={"effort": "low"})
    kinds = [item.type for item in first.output]
    assert "function_call" in kinds, kinds
    call = next(item for item in first.output if item.type == "function_call")
    jsonschema.validate(json.loads(call.arguments), WEATHER)
    follow = [{"role": "user", "content": "Weather in Bergen?"},
              {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
              {"type": "function_call_output", "call_id": call.call_id, "output": '{"temp": 7}'}]
    second = client.responses.create(model="m", input=follow, tools=[tool], tool_choice="none",  # type: ignore[arg-type, list-item]
                                     max_output_tokens=300)
    assert second.status in ("completed", "incomplete") and all(i.type != "function_call" for i in second.output)
    streamed = list(client.responses.create(model="m", input="Hi", max_output_tokens=200, stream=True,
                                            text={"format": {"type": "json_object"}}))  # headers kept
    kinds = [e.type for e in streamed]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert kinds.count("response.reasoning_text.delta") + kinds.count("response.output_text.delta") >= 1
    assert kinds.count("response.output_text.delta") <= 1  # a JSON answer comes whole, once checked
    done = streamed[-1].response  # type: ignore[union-attr]
    for item in done.output:  # the deltas add up to the items the response ends with
        deltas = [e.delta for e in streamed if getattr(e, "item_id", None) == item.id and e.type.endswith("text.delta")]  # type: ignore[union-attr]
        assert "".join(deltas) == item.content[0].text  # type: ignore[union-attr]
    with pytest.raises(openai.BadRequestError, match="previous_response_id"):
        client.responses.create(model="m", input="Hi", previous_response_id="resp_1")
    with pytest.raises(openai.BadRequestError) as searching:  # a tool it cannot run, forced
        client.responses.create(model="m", input="Hi", tools=[{"type": "web_search"}],  # type: ignore[list-item]
                                tool_choice={"type": "web_search"})  # type: ignore[arg-type]  # fmt: skip
    assert searching.value.code == "unsupported_tool"  # refused, not dropped silently


def test_harmony_desks_own_remote_backend_on_its_own_server(oss: str) -> None:
    from app.domain.endpoint import Endpoint
    from app.domain.events import ToolsRan, TurnResult
    from app.engine.remote.session import RemoteSession
    from app.tools.builtin.everyday import calculate
    from app.tools.registry import ToolRegistry

    endpoint = Endpoint(name="self", base_url=f"{oss}/v1", model="tiny")
    session = RemoteSession(endpoint, None, max_tokens=300)
    events = list(tool_turn(session, "Compute 6*7.", ToolRegistry([calculate]), tool_choice="calculate",
                                max_calls=1))
    ran = [o for e in events if isinstance(e, ToolsRan) for o in e.outcomes]
    assert ran and ran[0].call_id  # the server's call reached the app's tool host, which ran it
    assert isinstance(events[-1], TurnResult)
    follow = list(tool_turn(session, "And 2+2?", ToolRegistry([calculate]), tool_choice="none"))
    assert isinstance(follow[-1], TurnResult)


def test_a_request_whose_client_leaves_while_it_waits_is_never_run(smol: str) -> None:
    before = httpx.get(f"{smol}/harmony-desk/status").json()
    busy = threading.Thread(target=lambda: _client(smol).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Write a long story about a fox."}], max_tokens=200,
        temperature=0))
    busy.start()
    time.sleep(0.3)
    with pytest.raises(httpx.TimeoutException):  # this client gives up while the first is served
        httpx.post(f"{smol}/v1/chat/completions", timeout=0.5,  # an answer no step can end in 0.5 s
                   json={"messages": [{"role": "user", "content": "Write a long story about a cat."}],
                         "max_tokens": 200, "temperature": 0})
    busy.join(120)
    deadline = time.monotonic() + 30
    after = httpx.get(f"{smol}/harmony-desk/status").json()
    while after["waiting"] and time.monotonic() < deadline:
        time.sleep(0.2)
        after = httpx.get(f"{smol}/harmony-desk/status").json()
    assert after["stopped"] == before["stopped"] + 1 and after["waiting"] == 0


def test_off_loopback_a_token_from_the_keyring_is_required(tmp_path: Path, secret_service: dict[str, str]) -> None:
    serving = _serve("default", tmp_path, "--require-token", "--max-tokens", "16")  # the private keyring's env
    try:
        base = next(serving)
        said = next(p for p in tmp_path.glob("serve-*.log")).read_text()
        token = said.split("kept in the keyring): ", 1)[1].split()[0]
        assert httpx.get(f"{base}/v1/models").status_code == 401
        lan = httpx.get(f"{base}/v1/models", headers={"authorization": f"Bearer {token}", "host": "desk.lan:8080"})
        assert lan.status_code == 200  # with the token, a LAN name in Host is fine
        ok = httpx.get(f"{base}/v1/models", headers={"authorization": f"Bearer {token}"})
        assert ok.status_code == 200
        with openai.OpenAI(base_url=f"{base}/v1", api_key=token, max_retries=0) as client:
            assert client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}],
                                                  max_tokens=4).choices[0].message.content is not None
        from app.cli.serve import TOKEN_KEY
        from app.secrets import Secrets
        from tests.keys.test_endpoints import secret_service_backend

        assert Secrets(secret_service_backend()).get(TOKEN_KEY) == token
        written = [p for p in (tmp_path / "data").rglob("*") if p.is_file() and token.encode() in p.read_bytes()]
        assert written == []  # not in a log or any file the app writes
    finally:
        serving.close()
