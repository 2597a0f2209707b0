"""Anthropic's Messages API on a real `harmony-desk serve` (loopback) with the real `anthropic`
SDK as its client: whole and streamed answers on the bundled SmolLM2 (the stream's exact event
sequence, its deltas adding up to the whole message), system and multi-turn, stop sequences,
`count_tokens` against the prompt a real request renders, a tool round trip (tool_use, then
tool_result, then an answer) in SmolLM2's Hermes call format, thinking blocks from the tiny
gpt-oss only when asked, `x-api-key` beside the bearer token, and malformed requests answered
400 in Anthropic's error shape (never a 500); a client that leaves a stream stops its generation.

Cases marked "llama.cpp:" are adapted from llama.cpp tools/server/tests (MIT License, Copyright
(c) 2023-2024 The ggml authors), `unit/test_compat_anthropic.py`, to our models (no exact model
text). Left out: `test_anthropic_vision_base64_with_multimodal_model` (no vision model here: an
image is refused, see `test_anthropic_vision_format_refused`), `test_anthropic_thinking_history
_in_template` (llama-server's own `/apply-template` route; the same history is checked through
`count_tokens` on gpt-oss), and llama.cpp's permissive 200 for an empty `messages` list (Anthropic
answers 400, as we do: `test_malformed_requests_are_400_in_anthropics_shape`).
`test_anthropic_thinking_with_reasoning_model` runs on the tiny gpt-oss instead of a 7B download.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2 as httpx
import jsonschema
import pytest

from tests.keys.test_endpoints import secret_service
from tests.server.test_server import _CLIENTS, _closing, _serve, left_midway, oss, smol

__all__ = ["_closing", "oss", "secret_service", "smol"]

TIMEZONE = {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}
TOOL = {"name": "get_current_time", "description": "The current time in a timezone.", "input_schema": TIMEZONE}
ASK = [{"role": "user", "content": "What time is it in Tokyo?"}]
GREEDY = {"temperature": 0}
_SDK: dict[str, anthropic.Anthropic] = {}


def _client(base: str) -> anthropic.Anthropic:
    """One SDK client per server, closed with the module's other clients (`_closing`)."""
    if base not in _SDK:
        _SDK[base] = _CLIENTS[f"anthropic {base}"] = anthropic.Anthropic(  # type: ignore[assignment]
            base_url=base, api_key="none", max_retries=0, timeout=120
        )
    return _SDK[base]


def _post(base: str, body: Any, path: str = "/v1/messages", **headers: str) -> httpx.Response:
    raw = body if isinstance(body, str) else json.dumps(body)
    sent = {"content-type": "application/json", **headers}
    return httpx.post(f"{base}{path}", content=raw, headers=sent, timeout=120)


def _events(base: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The stream's events as (the `event:` name, the data), checked to agree."""
    said: list[tuple[str, dict[str, Any]]] = []
    with httpx.stream("POST", f"{base}/v1/messages", json={**body, "stream": True}, timeout=120) as answer:
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
        name = ""
        for line in answer.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = json.loads(line.removeprefix("data: "))
                assert data["type"] == name, (name, data)
                said.append((name, data))
    return said


def _checked_sequence(events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Anthropic's event grammar: message_start, (ping), blocks started, grown and stopped in
    index order, message_delta, message_stop; the blocks they built."""
    names = [n for n, _ in events if n != "ping"]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"], names
    start = events[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None and start["id"].startswith("msg_")
    assert start["usage"]["input_tokens"] > 0
    blocks: list[dict[str, Any]] = []
    open_at = None
    for name, data in events[1:-2]:
        if name == "content_block_start":
            assert open_at is None and data["index"] == len(blocks)
            blocks.append(dict(data["content_block"]))
            open_at = data["index"]
        elif name == "content_block_delta":
            assert data["index"] == open_at
            delta, block = data["delta"], blocks[open_at]
            kind = delta["type"]
            if kind == "text_delta":
                block["text"] += delta["text"]
            elif kind == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif kind == "signature_delta":
                block["signature"] = delta["signature"]
            else:
                assert kind == "input_json_delta" and block["type"] == "tool_use"
                block["json"] = block.get("json", "") + delta["partial_json"]
        elif name == "content_block_stop":
            assert data["index"] == open_at
            if "json" in blocks[open_at]:  # the input, whole once its block stops
                blocks[open_at]["input"] = json.loads(blocks[open_at].pop("json"))
            open_at = None
        else:
            assert name == "ping", name
    assert open_at is None
    return blocks


def test_whole_and_streamed_answers_on_the_default_model(smol: str) -> None:
    client = _client(smol)
    ask: list[Any] = [{"role": "user", "content": "Say hello."}]
    whole = client.messages.create(model="m", max_tokens=24, system="You are brief.", messages=ask,
                                   extra_body=GREEDY)
    assert whole.type == "message" and whole.role == "assistant" and whole.id.startswith("msg_")
    assert "SmolLM2" in whole.model and [b.type for b in whole.content] == ["text"]
    text = whole.content[0].text  # type: ignore[union-attr]
    assert text and whole.stop_reason in ("end_turn", "max_tokens") and whole.stop_sequence is None
    assert 0 < whole.usage.output_tokens <= 24 and whole.usage.input_tokens > 5
    events = _events(smol, {"model": "m", "max_tokens": 24, "system": "You are brief.", "messages": ask, **GREEDY})
    blocks = _checked_sequence(events)
    assert blocks == [{"type": "text", "text": text}]  # the same text, whole or streamed (greedy)
    delta = events[-2][1]
    assert delta["delta"] == {"stop_reason": whole.stop_reason, "stop_sequence": None}
    assert delta["usage"]["output_tokens"] == whole.usage.output_tokens
    assert events[0][1]["message"]["usage"]["input_tokens"] == (
        delta["usage"]["input_tokens"] + delta["usage"]["cache_read_input_tokens"])
    with client.messages.stream(model="m", max_tokens=24, system="You are brief.", messages=ask,
                                extra_body=GREEDY) as stream:
        assert "".join(stream.text_stream) == text
        final = stream.get_final_message()
    assert final.content[0].text == text and final.stop_reason == whole.stop_reason  # type: ignore[union-attr]


def test_system_blocks_and_multi_turn(smol: str) -> None:
    client = _client(smol)
    plain = client.messages.count_tokens(model="m", messages=ASK).input_tokens  # type: ignore[arg-type]
    said = client.messages.count_tokens(model="m", system="You are a pirate.", messages=ASK).input_tokens  # type: ignore[arg-type]
    blocks = client.messages.count_tokens(model="m", messages=ASK,  # type: ignore[arg-type]
                                          system=[{"type": "text", "text": "You are "},
                                                  {"type": "text", "text": "a pirate."}]).input_tokens
    assert said > plain and blocks == said  # text blocks: the same system prompt as the string
    turns: list[Any] = [{"role": "user", "content": "My name is Ada."},
                        {"role": "assistant", "content": [{"type": "text", "text": "Hello Ada!"}]},
                        {"role": "user", "content": "What is my name?"}]
    answer = client.messages.create(model="m", max_tokens=20, messages=turns, extra_body=GREEDY)
    assert answer.content and answer.content[0].type == "text" and answer.content[0].text
    assert client.messages.count_tokens(model="m", messages=turns).input_tokens > plain


def test_stop_sequences_end_the_answer_before_them_whole_and_streamed(smol: str) -> None:
    client = _client(smol)
    ask: list[Any] = [{"role": "user", "content": "Count from one to ten in words."}]
    full = client.messages.create(model="m", max_tokens=40, messages=ask, extra_body=GREEDY)
    text = full.content[0].text  # type: ignore[union-attr]
    words = text.split()
    word = words[2] if len(words) > 3 else text[1:4]
    cut = client.messages.create(model="m", max_tokens=40, messages=ask, stop_sequences=["\u2603", word],
                                 extra_body=GREEDY)
    assert cut.content[0].text == text[: text.index(word)]  # type: ignore[union-attr]
    assert cut.stop_reason == "stop_sequence" and cut.stop_sequence == word
    assert cut.usage.output_tokens < full.usage.output_tokens  # the generation stopped there too
    events = _events(smol, {"model": "m", "max_tokens": 40, "messages": ask, "stop_sequences": [word], **GREEDY})
    assert _checked_sequence(events) == [{"type": "text", "text": text[: text.index(word)]}]
    assert events[-2][1]["delta"] == {"stop_reason": "stop_sequence", "stop_sequence": word}


def test_count_tokens_is_the_prompt_a_request_renders(smol: str) -> None:
    client = _client(smol)
    bodies: list[dict[str, Any]] = [
        {"messages": ASK},
        {"messages": ASK, "system": "Answer in French."},
        {"messages": ASK, "tools": [TOOL]},
    ]
    counts = []
    for body in bodies:
        counted = client.messages.count_tokens(model="m", **body).input_tokens
        real = client.messages.create(model="m", max_tokens=4, **body, extra_body=GREEDY).usage
        assert counted == real.input_tokens + (real.cache_read_input_tokens or 0), body
        counts.append(counted)
    assert counts[0] < counts[1] and counts[0] < counts[2]  # the system prompt and tools are counted


def test_a_tool_round_trip_on_smollm2(smol: str) -> None:
    client = _client(smol)
    called = client.messages.create(model="m", max_tokens=100, messages=ASK, tools=[TOOL],  # type: ignore[arg-type, list-item]
                                    tool_choice={"type": "any"}, extra_body=GREEDY)
    assert called.stop_reason == "tool_use", called
    use = next(b for b in called.content if b.type == "tool_use")
    assert use.name == "get_current_time" and use.id.startswith("toolu_")
    jsonschema.validate(use.input, TIMEZONE)
    events = _events(smol, {"model": "m", "max_tokens": 100, "messages": ASK, "tools": [TOOL],
                            "tool_choice": {"type": "any"}, **GREEDY})
    streamed = _checked_sequence(events)
    assert [b["type"] for b in streamed] == [b.type for b in called.content]
    assert streamed[-1]["name"] == use.name and streamed[-1]["input"] == use.input  # the same call (greedy)
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    named = client.messages.create(model="m", max_tokens=100, messages=ASK, tools=[TOOL],  # type: ignore[arg-type, list-item]
                                   tool_choice={"type": "tool", "name": "get_current_time"}, extra_body=GREEDY)
    assert named.stop_reason == "tool_use"
    follow: list[Any] = [*ASK, {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in called.content]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                                       "content": json.dumps({"time": "14:05"})}]}]
    for choice in ({"type": "auto"}, {"type": "none"}):
        final = client.messages.create(model="m", max_tokens=120, messages=follow, tools=[TOOL],  # type: ignore[arg-type, list-item]
                                       tool_choice=choice, extra_body=GREEDY)  # type: ignore[arg-type]
        assert final.stop_reason == "end_turn", (choice, final)
        assert [b.type for b in final.content] == ["text"] and final.content[0].text  # type: ignore[union-attr]


def test_thinking_blocks_from_gpt_oss_only_when_asked(oss: str) -> None:
    client = _client(oss)
    ask: list[Any] = [{"role": "user", "content": "What is 2+2?"}]
    quiet = client.messages.create(model="m", max_tokens=120, messages=ask)
    assert all(b.type != "thinking" for b in quiet.content)  # reasoning is not sent unasked
    thinking = {"type": "enabled", "budget_tokens": 16}
    whole = client.messages.create(model="m", max_tokens=120, messages=ask, thinking=thinking)  # type: ignore[arg-type]
    thought = [b for b in whole.content if b.type == "thinking"]
    assert thought and thought[0].thinking and thought[0].signature
    assert all("<|" not in (getattr(b, "text", "") or "") for b in whole.content)
    with client.messages.stream(model="m", max_tokens=120, messages=ask, thinking=thinking) as stream:  # type: ignore[arg-type]
        final = stream.get_final_message()  # the SDK folds thinking and signature deltas
    assert final.content[0].type == "thinking" and final.content[0].thinking and final.content[0].signature


def test_anthropic_thinking_with_reasoning_model_streamed_and_called(oss: str) -> None:
    # llama.cpp: test_anthropic_thinking_with_reasoning_model (stream=True), on the tiny gpt-oss
    # greedy: whether the random-weight model thinks before its call is not left to the draw
    events = _events(oss, {"model": "m", "max_tokens": 300, "messages": [{"role": "user", "content": "Weather in Oslo?"}],
                           "thinking": {"type": "enabled", "budget_tokens": 16}, "temperature": 0,
                           "tools": [TOOL], "tool_choice": {"type": "tool", "name": "get_current_time"}})
    blocks = _checked_sequence(events)
    # the random-weight model may write a preamble before its analysis: the thinking block is
    # found, not assumed first (llama.cpp's case has a real model, which thinks first)
    at = next(i for i, b in enumerate(blocks) if b["type"] == "thinking")
    assert blocks[at]["thinking"] and blocks[at]["signature"]
    kinds = [d["delta"]["type"] for n, d in events if n == "content_block_delta" and d["index"] == at]
    assert kinds[-1] == "signature_delta" and "thinking_delta" in kinds  # signed before the block closes
    assert blocks[-1]["type"] == "tool_use" and blocks[-1]["name"] == "get_current_time"
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_anthropic_thinking_history_in_count_tokens(oss: str) -> None:
    # llama.cpp: test_anthropic_thinking_history_in_count_tokens (gpt-oss renders reasoning before calls)
    tool = {"name": "list_files", "description": "List files", "input_schema": {
        "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}
    use = {"type": "tool_use", "id": "call_1", "name": "list_files", "input": {"path": "."}}
    thought = {"type": "thinking", "thinking": "I should check the project structure first.", "signature": "x"}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "main.py"}]}
    counts = [
        _post(oss, {"model": "m", "tools": [tool], "messages": [
            {"role": "user", "content": "Fix the bug"}, {"role": "assistant", "content": blocks}, result]},
              "/v1/messages/count_tokens").json()["input_tokens"]
        for blocks in ([use], [thought, use])
    ]
    assert counts[1] > counts[0]


def test_x_api_key_is_accepted_beside_the_bearer_token(tmp_path: Path, secret_service: dict[str, str]) -> None:
    serving = _serve("default", tmp_path, "--require-token", "--max-tokens", "16")
    try:
        base = next(serving)
        token = next(tmp_path.glob("serve-*.log")).read_text().split("kept in the keyring): ", 1)[1].split()[0]
        body = {"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}]}
        refused = _post(base, body)
        assert refused.status_code == 401 and refused.json()["type"] == "error"
        assert refused.json()["error"]["type"] == "authentication_error"
        assert _post(base, body, **{"x-api-key": "wrong"}).status_code == 401
        assert _post(base, body, **{"x-api-key": token, "anthropic-version": "2023-06-01"}).status_code == 200
        assert _post(base, body, authorization=f"Bearer {token}").status_code == 200
        with anthropic.Anthropic(base_url=base, api_key=token, max_retries=0) as client:  # sends x-api-key
            assert client.messages.create(model="m", max_tokens=4, messages=[{"role": "user", "content": "Hi"}]).content
        with anthropic.Anthropic(base_url=base, api_key="nope", max_retries=0) as client, \
                pytest.raises(anthropic.AuthenticationError):
            client.messages.create(model="m", max_tokens=4, messages=[{"role": "user", "content": "Hi"}])
        assert httpx.get(f"{base}/v1/models", headers={"x-api-key": token}).status_code == 200
    finally:
        serving.close()


HI = [{"role": "user", "content": "Hi"}]


@pytest.mark.parametrize(("body", "says"), [
    ({"model": "m", "messages": HI}, "max_tokens"),  # required, as in Anthropic's API
    ({"model": "m", "max_tokens": 8}, "messages"),  # llama.cpp: test_anthropic_missing_messages
    ({"model": "m", "max_tokens": 8, "messages": []}, "messages"),  # Anthropic refuses it (llama.cpp: 200)
    ({"max_tokens": 8, "messages": [{"role": "system", "content": "Hi"}]}, "messages.0.role"),
    ({"max_tokens": 8, "messages": [{"role": "tool", "content": "Hi"}]}, "messages.0.role"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": 7}]}, "messages.0.content"),
    ({"max_tokens": "many", "messages": HI}, "max_tokens"),
    ({"max_tokens": 0, "messages": HI}, "max_tokens"),
    ({"max_tokens": 8, "messages": HI, "temperature": 1.5}, "temperature"),
    ({"max_tokens": 8, "messages": HI, "stop_sequences": "END"}, "stop_sequences"),
    ({"max_tokens": 8, "messages": HI, "system": 3}, "system"),
    ({"max_tokens": 8, "messages": HI, "temprature": 0}, "temprature"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "video"}]}]}, "'video'"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "text"}]}]}, "messages.0.content.list.0"),
    ({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]},
     "messages.0.content.list.0"),
    ({"max_tokens": 8, "messages": [*HI, {"role": "assistant", "content": "Well,"}]}, "prefill"),
    ({"max_tokens": 8, "messages": HI, "tools": [{"type": "web_search_20250305", "name": "web_search"}]},
     "server tool"),
    ({"max_tokens": 8, "messages": HI, "tools": [TOOL], "tool_choice": {"type": "tool"}}, "tool_choice"),
    ({"max_tokens": 8, "messages": HI, "tools": [TOOL], "tool_choice": {"type": "tool", "name": "nope"}},
     "tool_choice"),
    ({"max_tokens": 8, "messages": HI, "thinking": {"type": "sometimes"}}, "thinking"),
    ("{not json", "JSON"),
])
def test_malformed_requests_are_400_in_anthropics_shape(smol: str, body: Any, says: str) -> None:
    answer = _post(smol, body)
    said = answer.json()
    assert answer.status_code == 400 and said["type"] == "error", said
    assert set(said) == {"type", "error"} and said["error"]["type"] == "invalid_request_error"
    assert says in said["error"]["message"], said


def test_the_sdk_reads_the_errors_and_the_guard_answers_in_anthropics_shape(smol: str) -> None:
    with pytest.raises(anthropic.BadRequestError) as missing:
        _client(smol).messages.create(model="m", max_tokens=0, messages=HI)  # type: ignore[arg-type]
    assert missing.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    form = httpx.post(f"{smol}/v1/messages", content=b"a=1", timeout=30,
                      headers={"content-type": "application/x-www-form-urlencoded"})
    assert form.status_code == 415 and form.json()["type"] == "error"
    rebinding = _post(smol, {"max_tokens": 4, "messages": HI}, host="attacker.example:80")
    assert rebinding.status_code == 403 and rebinding.json()["error"]["type"] == "permission_error"
    chat = httpx.post(f"{smol}/v1/chat/completions", content=b"{", timeout=30,
                      headers={"content-type": "application/json"})
    assert chat.json()["error"]["code"] == "invalid_json"  # the OpenAI routes keep OpenAI's shape


def test_anthropic_vision_format_refused(smol: str) -> None:
    # llama.cpp: test_anthropic_vision_format_accepted and test_anthropic_tool_result_with_image; llama-server
    # answers 500 "image input is not supported" on a text model, we answer 400 saying so
    pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": pixel}}
    direct = [{"role": "user", "content": [image, {"type": "text", "text": "What is this?"}]}]
    in_result = [{"role": "user", "content": "What is in this image?"},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": "tool_1", "name": "read",
                                                    "input": {"file": "test.png"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tool_1",
                                               "content": [{"type": "text", "text": "File: test.png"}, image]}]}]
    for messages, where in ((direct, "messages.0.content.0"), (in_result, "messages.2.content.0.content.1")):
        answer = _post(smol, {"model": "m", "max_tokens": 10, "messages": messages})
        assert answer.status_code == 400 and "image blocks are not supported" in answer.json()["error"]["message"]
        assert answer.json()["error"]["type"] == "invalid_request_error" and where in answer.json()["error"]["message"]


def test_anthropic_messages_basic_and_vs_openai_format(smol: str) -> None:
    # llama.cpp: test_anthropic_messages_basic, test_anthropic_vs_openai_different_response_format
    body = {"model": "test", "max_tokens": 12, "messages": [{"role": "user", "content": "Say hello"}]}
    res = _post(smol, body).json()
    assert res["type"] == "message" and res["role"] == "assistant" and res["content"][0]["type"] == "text"
    assert res["stop_reason"] in ("end_turn", "max_tokens") and "timings" not in res
    usage = res["usage"]
    assert all(isinstance(usage[k], int) for k in ("input_tokens", "output_tokens", "cache_read_input_tokens"))
    assert usage["output_tokens"] > 0
    chat = httpx.post(f"{smol}/v1/chat/completions", json=body, timeout=60).json()
    assert chat["object"] == "chat.completion" and "choices" in chat and "prompt_tokens" in chat["usage"]
    assert "object" not in res and "choices" not in res and "prompt_tokens" not in usage


@pytest.mark.parametrize("extra", [
    {"system": "You are a helpful assistant."},  # llama.cpp: test_anthropic_messages_with_system
    {"messages": [{"role": "user", "content": [{"type": "text", "text": "What is"},
                                               {"type": "text", "text": " the answer?"}]}]},  # ..._multipart_content
    {"messages": [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there!"},
                  {"role": "user", "content": "How are you?"}]},  # test_anthropic_messages_conversation
    {"stop_sequences": ["\n", "END"]},  # test_anthropic_stop_sequences
    {"temperature": 0.5},  # test_anthropic_temperature
    {"top_p": 0.9},  # test_anthropic_top_p
    {"top_k": 40},  # test_anthropic_top_k
    {"metadata": {"user_id": "test_user_123"}},  # test_anthropic_metadata
    {"thinking": {"type": "enabled", "budget_tokens": 50}},  # test_anthropic_thinking (a model without reasoning)
])
def test_anthropic_parameters_are_taken(smol: str, extra: dict[str, Any]) -> None:
    # llama.cpp: the cases named beside each parameter set
    body = {"model": "test", "max_tokens": 8, "messages": [{"role": "user", "content": "Hello"}], **extra}
    res = _post(smol, body)
    assert res.status_code == 200, res.text
    said = res.json()
    assert said["type"] == "message" and (said["content"] or said["stop_reason"] == "stop_sequence")
    assert all(b["type"] == "text" for b in said["content"])


def test_anthropic_messages_streaming(smol: str) -> None:
    # llama.cpp: test_anthropic_messages_streaming
    events = _events(smol, {"model": "test", "max_tokens": 12, "messages": [{"role": "user", "content": "Say hello"}]})
    blocks = _checked_sequence(events)
    assert blocks[0]["type"] == "text" and blocks[0]["text"]
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] in ("end_turn", "max_tokens") and delta["usage"]["output_tokens"] > 0
    assert "timings" not in events[-1][1]


@pytest.mark.parametrize("body", [
    {"messages": [{"role": "user", "content": "Hello world"}]},  # llama.cpp: test_anthropic_count_tokens
    {"system": "You are a helpful assistant.", "messages": [{"role": "user", "content": "Hello"}]},  # ..._with_system
])
def test_anthropic_count_tokens(smol: str, body: dict[str, Any]) -> None:
    # llama.cpp: test_anthropic_count_tokens, _with_system, _no_max_tokens (none is sent)
    res = _post(smol, {"model": "test", **body}, "/v1/messages/count_tokens")
    assert res.status_code == 200 and set(res.json()) == {"input_tokens"} and res.json()["input_tokens"] > 0
    assert _post(smol, {"model": "test", **body}, "/messages/count_tokens").json() == res.json()  # unprefixed


@pytest.mark.parametrize("result", [
    [{"type": "tool_result", "tool_use_id": "test123", "content": "The weather is sunny, 25°C"}],  # tool_result
    [{"type": "text", "text": "Here are the results:"},
     {"type": "tool_result", "tool_use_id": "test123", "content": "Sunny, 25°C"}],  # tool_result_with_text
    [{"type": "tool_result", "tool_use_id": "test123", "is_error": True, "content": "City not found"}],  # ..._error
])
def test_anthropic_tool_results(smol: str, result: list[dict[str, Any]]) -> None:
    # llama.cpp: test_anthropic_tool_result, test_anthropic_tool_result_with_text, test_anthropic_tool_result_error
    tool = {"name": "get_weather", "description": "Get the current weather in a location",
            "input_schema": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}
    messages = [{"role": "user", "content": "What's the weather?"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "test123", "name": "get_weather",
                                                   "input": {"location": "Paris"}}]},
                {"role": "user", "content": result}]
    res = _post(smol, {"model": "test", "max_tokens": 30, "messages": messages, "tools": [tool], **GREEDY})
    assert res.status_code == 200, res.text
    assert res.json()["type"] == "message" and res.json()["content"]
    plain = _post(smol, {"model": "test", "messages": messages[:1]}, "/v1/messages/count_tokens").json()
    history = _post(smol, {"model": "test", "messages": messages}, "/v1/messages/count_tokens").json()
    assert history["input_tokens"] > plain["input_tokens"]  # the call and its result are in the prompt


def test_anthropic_tool_use_streaming_and_block_indices(smol: str) -> None:
    # llama.cpp: test_anthropic_tool_use_basic, test_anthropic_tool_streaming,
    # test_anthropic_streaming_content_block_indices (a call forced with tool_choice any, so the cases always run)
    calculator = {"name": "calculator", "description": "Calculate math",
                  "input_schema": {"type": "object", "properties": {"expression": {"type": "string"}},
                                   "required": ["expression"]}}
    body = {"model": "test", "max_tokens": 200, "tools": [calculator], "tool_choice": {"type": "any"},
            "messages": [{"role": "user", "content": "Calculate 2+2"}], **GREEDY}
    whole = _post(smol, body).json()
    assert whole["stop_reason"] == "tool_use"
    call = next(b for b in whole["content"] if b["type"] == "tool_use")
    assert call["name"] == "calculator" and isinstance(call["input"], dict) and call["id"]
    events = _events(smol, body)
    blocks = _checked_sequence(events)  # indices sequential, each block stopped at its own index
    starts = [d for n, d in events if n == "content_block_start" and d["content_block"]["type"] == "tool_use"]
    assert starts and starts[0]["content_block"]["name"] == "calculator" and starts[0]["content_block"]["input"] == {}
    assert [b["type"] for b in blocks] == [b["type"] for b in whole["content"]]


def test_blocks_fold_pieces_into_indexed_blocks_and_events() -> None:
    from app.server.answer import Piece
    from app.server.anthropic.blocks import Blocks

    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    pieces = [Piece(reasoning="Let me "), Piece(reasoning="think."), Piece(content="Hi"), Piece(content=" there"),
              Piece(reasoning="more", calls=[call])]
    for thinks in (True, False):
        blocks = Blocks(thinks)
        said = [e for p in pieces for e in blocks.feed(p)] + blocks.close()
        events = [(e.split(b"\n")[0].decode().removeprefix("event: "), json.loads(e.split(b"\n")[1][6:]))
                  for e in said]
        built = _checked_sequence([("message_start", {"message": {"content": [], "stop_reason": None, "id": "msg_1",
                                                                  "usage": {"input_tokens": 1}}}),
                                   *events, ("message_delta", {}), ("message_stop", {})])
        assert built == blocks.content  # the events add up to the whole message's blocks
        kinds = [b["type"] for b in built]
        if thinks:
            assert kinds == ["thinking", "text", "thinking", "tool_use"]
            assert built[0]["thinking"] == "Let me think." and built[0]["signature"] != built[2]["signature"]
        else:
            assert kinds == ["text", "tool_use"]  # reasoning not asked for: not sent
        assert built[-1] == {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}


def test_a_client_that_leaves_a_stream_stops_its_generation(smol: str) -> None:
    body = {"max_tokens": 256, "stream": True, **GREEDY,
            "messages": [{"role": "user", "content": "Write a very long essay about rivers."}]}
    before, after = left_midway(smol, "/v1/messages", body, lines=12)
    assert after["stopped"] == before["stopped"] + 1 and after["generated"] - before["generated"] < 256


def test_every_event_writer_keeps_its_data_on_one_line_for_splitlines_readers() -> None:
    from app.server.anthropic.blocks import sse
    from app.server.running import event

    text = "a\u2028b\u0085c\u2029d"
    for written in (event({"content": text}), sse("ping", text=text)):
        data = [line for line in written.decode().splitlines() if line.startswith("data: ")]
        assert len(data) == 1 and text in json.dumps(json.loads(data[0][6:]), ensure_ascii=False)
