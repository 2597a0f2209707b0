"""llama.cpp's own server tests, ported to `harmony-desk serve` (the OpenAI-compatible surface).

Adapted from llama.cpp tools/server/tests (MIT License, Copyright (c) 2023-2024 The ggml authors),
`tools/server/tests/unit/` as vendored in llama-cpp-python 0.3.36: test_basic.py,
test_security.py, test_chat_completion.py, test_completion.py, test_compat_oai_responses.py.
Run on the bundled SmolLM2 (`--model default`) where llama.cpp uses tinyllama2. Exact model text
(llama.cpp's regexes and token counts of tinyllama2) is replaced by what does not depend on the
model: shapes, finish reasons, counts against `max_tokens`, streamed text equal to whole text.

Left out, and why:
- llama-server-only routes and fields: `/props`, `/slots`, `/completion` (native; its cases
  are ported onto `/completions` where they are OpenAI's), `/tokenize`, `/apply-template`,
  `/chat/completions/input_tokens`, `/cors-proxy`, the web UI and its static assets (`/`,
  `--no-ui`), `__verbose`, `timings_per_token`, `return_progress`, `n_probs`, `cache_prompt`,
  `id_slot`, top-level `grammar` and `json_schema`, `chat_template` / `jinja` /
  `continue_final_message` / assistant prefill, model aliases and tags, split GGUFs fetched from
  Hugging Face, several listen addresses: server options and extensions OpenAI's API does not
  have (ours answers a field it does not have with 400 `unknown_field`).
- `logit_bias` (needs `/tokenize`; this server does not apply it and says so in a warning header,
  pinned in tests/server/test_server.py).
- llama.cpp's error vocabulary: `exceed_context_size_error` with `n_prompt_tokens` / `n_ctx` and
  `authentication_error` — ours answers OpenAI's (`context_length_exceeded`, `invalid_api_key`);
  the ported cases check status and the error object.
- `/health` without the API key (test_access_public_endpoint): with a token every route asks for
  it here, `/health` too; ported without a token.
- CORS (test_cors_*): llama-server reflects `localhost` origins and allows credentials; this
  server answers only origins listed with `--cors-origin` (a page of another origin gets 403).
  Ported: an origin not listed is never reflected.
- Two assistant messages in a row is a 400 (or 500) there; it is a valid OpenAI conversation:
  ported as answered (200).
- `delta.content` of the first streamed chunk is `null` there; it is `""` here, as OpenAI sends it
  (both accepted).
- Exact cached-token counts (test_chat_completion_cached_tokens, slot-specific): ported as "a
  repeated prompt is read from the cache".
- Anthropic (test_compat_anthropic.py), embeddings (test_embedding.py) and tool calls
  (test_tool_call.py) are ported by their own suites; infill, rerank, LoRA, speculative decoding,
  slot save, metrics, router, MCP and vision are llama-server features this server does not have.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import openai
import pytest

from tests.keys.test_endpoints import secret_service
from tests.server.test_server import _serve

__all__ = ["secret_service"]

BOOK = [{"role": "system", "content": "Book"}, {"role": "user", "content": "What is the best book"}]
LIFE = "I believe the meaning of life is"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _serve("default", tmp_path_factory.mktemp("llamacpp"), "--max-tokens", "256")


def _post(base: str, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(f"{base}{path}", json=body, headers=headers, timeout=120)


def _events(base: str, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    answer = _post(base, path, {**body, "stream": True})
    assert answer.status_code == 200, answer.text
    data = [line[6:] for line in answer.text.splitlines() if line.startswith("data: ")]
    return [json.loads(d) for d in data if d != "[DONE]"]


def _sdk(base: str, key: str = "dummy") -> openai.OpenAI:
    return openai.OpenAI(api_key=key, base_url=f"{base}/v1", max_retries=0)


# test_basic.py


def test_server_start_simple(server: str) -> None:
    res = httpx.get(f"{server}/health", timeout=10)
    assert res.status_code == 200 and res.json() == {"status": "ok"}


def test_server_models(server: str) -> None:
    res = httpx.get(f"{server}/models", timeout=10)
    assert res.status_code == 200
    assert res.json() == httpx.get(f"{server}/v1/models", timeout=10).json()
    assert "SmolLM2" in res.json()["data"][0]["id"]  # the chat model first (an embedder may follow)


# test_chat_completion.py


@pytest.mark.parametrize("model", [None, "codellama70b"])
@pytest.mark.parametrize("user_prompt", ["What is the best book",
                                         [{"type": "text", "text": "What is"}, {"type": "text", "text": "the best book"}]])
def test_chat_completion(server: str, model: str | None, user_prompt: Any) -> None:
    res = _post(server, "/chat/completions", {"model": model, "max_tokens": 8, "messages": [
        {"role": "system", "content": "Book"}, {"role": "user", "content": user_prompt}]})
    assert res.status_code == 200, res.text
    assert "cmpl" in res.json()["id"]
    assert res.json()["system_fingerprint"]
    usage, choice = res.json()["usage"], res.json()["choices"][0]
    assert usage["prompt_tokens"] > 5
    assert choice["message"]["role"] == "assistant" and choice["message"]["content"]
    assert choice["finish_reason"] in ("length", "stop")
    assert usage["completion_tokens"] == 8 if choice["finish_reason"] == "length" else usage["completion_tokens"] <= 8


def test_chat_completion_stream(server: str) -> None:
    events = _events(server, "/chat/completions", {"max_tokens": 8, "messages": BOOK,
                                                   "stream_options": {"include_usage": True}})
    content, ids, finished = "", {e["id"] for e in events}, 0
    for i, data in enumerate(events):
        assert data["system_fingerprint"] and data["model"]
        if not data["choices"]:  # the usage chunk, last
            assert i == len(events) - 1 and data["usage"]["completion_tokens"] <= 8
            continue
        choice = data["choices"][0]
        if i == 0:
            assert choice["delta"]["role"] == "assistant" and choice["delta"]["content"] in (None, "")
        else:
            assert "role" not in choice["delta"]
        if choice["finish_reason"] in ("stop", "length"):
            assert "content" not in choice["delta"]
            finished += 1
        else:
            assert choice["finish_reason"] is None
            content += choice["delta"].get("content") or ""
    assert len(ids) == 1 and finished == 1 and content


def test_chat_completion_with_openai_library(server: str) -> None:
    with _sdk(server) as client:
        res = client.chat.completions.create(model="gpt-3.5-turbo-instruct", messages=BOOK,  # type: ignore[arg-type]
                                             max_tokens=8, seed=42, temperature=0.8)
    assert res.system_fingerprint is not None
    assert res.choices[0].finish_reason == "length"
    assert res.choices[0].message.content


def test_chat_completion_cached_tokens(server: str) -> None:
    body = {"max_tokens": 8, "messages": [{"role": "system", "content": "Test"},
                                          {"role": "user", "content": "1 2 3 4 5 6"}]}
    first = _post(server, "/chat/completions", body).json()["usage"]
    again = _post(server, "/chat/completions", body).json()["usage"]
    assert again["prompt_tokens"] == first["prompt_tokens"]
    assert 0 <= first["prompt_tokens_details"]["cached_tokens"] <= first["prompt_tokens"]
    assert again["prompt_tokens_details"]["cached_tokens"] > 0  # read from the KV cache


@pytest.mark.parametrize(("response_format", "ok"), [
    ({"type": "json_schema", "json_schema": {"name": "c", "schema": {"const": "foooooo"}}}, True),
    ({"type": "json_object"}, True),
    ({"type": "sound"}, False),
    ({"type": "json_schema", "json_schema": {"name": "c", "schema": 123}}, False),
    ({"type": "json_schema", "json_schema": {"name": "c", "schema": {"type": 123}}}, False),
    ({"type": "json_schema", "json_schema": {"name": "c", "schema": {"type": "hiccup"}}}, False),
])
def test_completion_with_response_format(server: str, response_format: dict[str, Any], ok: bool) -> None:
    res = _post(server, "/chat/completions", {"max_tokens": 10, "response_format": response_format, "messages": [
        {"role": "system", "content": "You are a coding assistant."}, {"role": "user", "content": "Write an example"}]})
    if not ok:
        assert res.status_code == 400 and res.json()["error"]["message"], res.text
        return
    assert res.status_code == 200, res.text
    content = res.json()["choices"][0]["message"]["content"]
    if response_format["type"] == "json_schema":
        assert json.loads(content) == "foooooo"
    else:
        assert content.lstrip().startswith("{")


@pytest.mark.parametrize("messages", [
    None, "string", [123], [{}], [{"role": 123}], [{"role": "system", "content": 123}],
    [{"role": "system", "content": "test"}, {}],
])
def test_invalid_chat_completion_req(server: str, messages: Any) -> None:
    res = _post(server, "/chat/completions", {"messages": messages})
    assert res.status_code == 400 and "error" in res.json()


def test_two_assistant_messages_in_a_row_are_answered(server: str) -> None:
    res = _post(server, "/chat/completions", {"max_tokens": 4, "messages": [
        {"role": "user", "content": "test"}, {"role": "assistant", "content": "test"},
        {"role": "assistant", "content": "test"}]})
    assert res.status_code == 200 and res.json()["choices"][0]["message"]["role"] == "assistant"


def test_logprobs(server: str) -> None:
    with _sdk(server) as client:
        res = client.chat.completions.create(model="gpt-3.5-turbo-instruct", temperature=0.0, messages=BOOK,  # type: ignore[arg-type]
                                             max_tokens=5, logprobs=True, top_logprobs=10)
    output_text = res.choices[0].message.content
    assert res.choices[0].logprobs is not None and res.choices[0].logprobs.content is not None
    aggregated_text = ""
    for token in res.choices[0].logprobs.content:
        aggregated_text += token.token
        assert token.logprob <= 0.0 and token.bytes is not None and len(token.top_logprobs) > 0
    assert aggregated_text == output_text


def test_logprobs_stream(server: str) -> None:
    with _sdk(server) as client:
        res = client.chat.completions.create(model="gpt-3.5-turbo-instruct", temperature=0.0, messages=BOOK,  # type: ignore[arg-type]
                                             max_tokens=5, logprobs=True, top_logprobs=10, stream=True)
        output_text = aggregated_text = ""
        for i, data in enumerate(res):
            if not data.choices:
                continue
            choice = data.choices[0]
            if i == 0:
                assert choice.delta.content in (None, "") and choice.delta.role == "assistant"
            elif choice.finish_reason is None:
                assert choice.delta.role is None
                output_text += choice.delta.content or ""
                assert choice.logprobs is not None and choice.logprobs.content is not None
                for token in choice.logprobs.content:
                    aggregated_text += token.token
                    assert token.logprob <= 0.0 and token.bytes is not None and len(token.top_logprobs) > 0
    assert output_text and aggregated_text == output_text


def test_context_size_exceeded(server: str) -> None:
    res = _post(server, "/chat/completions", {"messages": BOOK * 200})  # the prompt outgrows 2048
    assert res.status_code == 400 and res.json()["error"]["code"] == "context_length_exceeded"
    streamed = _post(server, "/chat/completions", {"messages": BOOK * 200, "stream": True})
    assert streamed.status_code == 400 and streamed.json()["error"]["code"] == "context_length_exceeded"


def test_chat_completions_multiple_choices(server: str) -> None:
    for _ in range(2):  # the cache is reused across choices and requests
        res = _post(server, "/chat/completions", {"max_tokens": 8, "n": 2, "messages": BOOK})
        assert res.status_code == 200 and len(res.json()["choices"]) == 2
        for choice in res.json()["choices"]:
            assert choice["message"]["role"] == "assistant" and choice["finish_reason"] == "length"


# test_completion.py (OpenAI's /v1/completions; llama-server's native /completion cases moved here)


def test_completion_stream_vs_non_stream(server: str) -> None:
    body = {"max_tokens": 8, "prompt": LIFE, "temperature": 0}
    streamed = "".join(e["choices"][0]["text"] for e in _events(server, "/completions", body) if e["choices"])
    assert streamed == _post(server, "/completions", body).json()["choices"][0]["text"]


def test_completion_with_openai_library(server: str) -> None:
    with _sdk(server) as client:
        res = client.completions.create(model="davinci-002", prompt=LIFE, max_tokens=8)
    assert res.system_fingerprint is not None
    assert res.choices[0].finish_reason == "length" and res.choices[0].text


def test_completion_stream_with_openai_library(server: str) -> None:
    with _sdk(server) as client:
        output_text = ""
        for data in client.completions.create(model="davinci-002", prompt=LIFE, max_tokens=8, stream=True):
            choice = data.choices[0]
            if choice.finish_reason is None:
                assert choice.text is not None
                output_text += choice.text
    assert output_text


def test_consistent_result_same_seed(server: str) -> None:
    texts = {_post(server, "/completions", {"prompt": LIFE, "seed": 42, "temperature": 0.0, "max_tokens": 16})
             .json()["choices"][0]["text"] for _ in range(4)}
    assert len(texts) == 1


def test_different_result_different_seed(server: str) -> None:
    texts = [_post(server, "/completions", {"prompt": LIFE, "seed": seed, "temperature": 1.0, "max_tokens": 16})
             .json()["choices"][0]["text"] for seed in range(4)]
    assert all(a != b for a, b in itertools.pairwise(texts)), texts


def test_completion_parallel_requests(server: str) -> None:
    answers: list[httpx.Response] = []

    def ask(i: int) -> None:
        answers.append(_post(server, "/completions", {"prompt": f"{LIFE} {i}", "max_tokens": 8, "temperature": 0}))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert [a.status_code for a in answers] == [200] * 4
    assert all(a.json()["choices"][0]["text"] for a in answers)


# test_compat_oai_responses.py


def test_responses_with_openai_library(server: str) -> None:
    with _sdk(server) as client:
        res = client.responses.create(model="gpt-4.1", input=BOOK, max_output_tokens=8, temperature=0.8)  # type: ignore[arg-type]
    assert res.id.startswith("resp_")
    assert res.output[0].id is not None and res.output[0].id.startswith("msg_")
    assert res.output_text


def test_responses_stream_with_openai_library(server: str) -> None:
    with _sdk(server) as client:
        stream = client.responses.create(model="gpt-4.1", input=BOOK, max_output_tokens=8,  # type: ignore[arg-type]
                                         temperature=0.8, stream=True)
        gathered_text = resp_id = msg_id = ""
        ended = None
        for r in stream:
            if r.type == "response.created":
                assert r.response.id.startswith("resp_")
                resp_id = r.response.id
            if r.type == "response.in_progress":
                assert r.response.id == resp_id
            if r.type == "response.output_item.added":
                assert r.item.id is not None and r.item.id.startswith("msg_")
                msg_id = r.item.id
            if r.type in ("response.content_part.added", "response.output_text.delta",
                          "response.output_text.done", "response.content_part.done"):
                assert r.item_id == msg_id  # type: ignore[union-attr]
            if r.type == "response.output_item.done":
                assert r.item.id == msg_id
            if r.type == "response.output_text.delta":
                gathered_text += r.delta
            if r.type in ("response.completed", "response.incomplete"):  # 8 tokens may cut it
                ended = r.response
    assert ended is not None and ended.id == resp_id
    assert ended.output[0].id == msg_id and gathered_text == ended.output_text and gathered_text


# test_security.py


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory, secret_service: dict[str, str]) -> Iterator[tuple[str, str]]:
    tmp = tmp_path_factory.mktemp("keyed")
    serving = _serve("default", tmp, "--require-token", "--max-tokens", "16")
    base = next(serving)
    said = next(Path(tmp).glob("serve-*.log")).read_text()
    yield base, said.split("kept in the keyring): ", 1)[1].split()[0]
    serving.close()


@pytest.mark.parametrize("api_key", [None, "invalid-key"])
def test_incorrect_api_key(keyed: tuple[str, str], api_key: str | None) -> None:
    base, _ = keyed
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    res = _post(base, "/completions", {"prompt": LIFE}, **headers)
    assert res.status_code == 401
    assert res.json()["error"]["code"] == "invalid_api_key"


def test_correct_api_key(keyed: tuple[str, str]) -> None:
    base, key = keyed
    res = _post(base, "/completions", {"prompt": LIFE, "max_tokens": 4}, Authorization=f"Bearer {key}")
    assert res.status_code == 200 and "error" not in res.json() and res.json()["choices"][0]["text"]
    health = httpx.get(f"{base}/health", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    assert health.status_code == 200 and "error" not in health.json()


def test_correct_api_key_anthropic_header(keyed: tuple[str, str]) -> None:
    base, key = keyed
    res = _post(base, "/completions", {"prompt": LIFE, "max_tokens": 4}, **{"X-Api-Key": key})
    assert res.status_code == 200 and "error" not in res.json()


def test_openai_library_correct_api_key(keyed: tuple[str, str]) -> None:
    base, key = keyed
    with _sdk(base, key) as client:
        res = client.chat.completions.create(model="gpt-3.5-turbo", max_tokens=4, messages=[
            {"role": "system", "content": "You are a chatbot."},
            {"role": "user", "content": "What is the meaning of life?"}])
    assert len(res.choices) == 1


@pytest.mark.parametrize("origin", ["http://web.mydomain.fr", "http://evil.com", "http://notlocalhost",
                                    "http://localhost.evil.com"])
def test_cors_origins_not_listed_are_not_reflected(server: str, origin: str) -> None:
    res = httpx.options(f"{server}/completions", timeout=10, headers={
        "Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "Authorization"})
    assert "access-control-allow-origin" not in res.headers
    assert res.status_code == 403 and res.json()["error"]["code"] == "origin_not_allowed"
