"""/v1/embeddings on a real `harmony-desk serve` (loopback) with the real `openai` SDK: an
embedding GGUF (a tiny random-weight BERT, tests/tiny_embedding.py) in its own worker, checked
against llama-cpp-python's own `create_embedding` on the same file, and WordLlama when no
embedding model is chosen. Float and base64 (decoded equal), lists with their indices, token
arrays, `dimensions`, determinism, /v1/models, and every bad input a 400 (never a 500).

Some cases are adapted from llama.cpp tools/server/tests (MIT License, Copyright (c) 2023-2024
The ggml authors): `unit/test_embedding.py`; each is marked "llama.cpp:" with its name."""

from __future__ import annotations

import base64
import concurrent.futures as cf
import os
import signal
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import llama_cpp
import numpy as np
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.embedding import Embedded, NotEmbedded, Refusal
from app.engine.local.embedder import EmbeddingClient
from app.errors import ModelLoadError, WorkerError
from tests import tiny_embedding
from tests.server.test_server import _serve

LIFE = "I believe the meaning of life is"
FOUR = [LIFE, "Write a joke about AI from a very long prompt which will not be truncated",
        "This is a test", "This is another test"]
EPSILON = 1e-3


@pytest.fixture(scope="module")
def bert_path() -> Path:
    return tiny_embedding.build("mean")


@pytest.fixture(scope="module")
def gguf(tmp_path_factory: pytest.TempPathFactory, bert_path: Path) -> Iterator[str]:
    yield from _serve("default", tmp_path_factory.mktemp("emb"), "--embedding-model", str(bert_path))


@pytest.fixture(scope="module")
def wordllama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _serve("default", tmp_path_factory.mktemp("wl"))


@pytest.fixture(scope="module")
def reference(bert_path: Path) -> Iterator[Any]:
    """llama-cpp-python's own embedding mode on the same file, in this process."""
    llm = llama_cpp.Llama(str(bert_path), embedding=True, verbose=False)
    yield llm
    llm.close()


def _client(base: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0, timeout=60)


def _unit(rows: Any) -> np.ndarray:
    a = np.asarray(rows, dtype=np.float64)
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def _post(base: str, body: Any, path: str = "/v1/embeddings") -> httpx.Response:
    return httpx.post(base + path, json=body, timeout=60)


def _model_id(base: str) -> str:
    return str(httpx.get(f"{base}/v1/models", timeout=10).json()["data"][1]["id"])


# --- the GGUF in its worker ---------------------------------------------------------------------


def test_models_lists_the_embedding_model_beside_the_chat_model(gguf: str, bert_path: Path) -> None:
    listed = _client(gguf).models.list().data
    assert [m.id for m in listed][1] == bert_path.stem
    assert listed[1].owned_by == "harmony-desk" and listed[1].object == "model"


def test_vectors_equal_llama_cpp_pythons_own_create_embedding(gguf: str, reference: Any) -> None:
    """The same file, the same inputs: our vectors are llama-cpp-python's, normalised (to the
    last bits, input by input; within 1e-4 of its batched list, whose sums run in another
    order), and the usage counts the same tokens."""
    ours = _client(gguf).embeddings.create(model=_model_id(gguf), input=FOUR, encoding_format="float")
    theirs = reference.create_embedding(FOUR)
    assert [d.index for d in ours.data] == [0, 1, 2, 3]
    got = np.array([d.embedding for d in ours.data])
    alone = [reference.create_embedding(text)["data"][0]["embedding"] for text in FOUR]
    assert np.allclose(got, _unit(alone), rtol=0, atol=1e-6)
    assert np.allclose(got, _unit([d["embedding"] for d in theirs["data"]]), atol=1e-4)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    assert ours.usage.prompt_tokens == ours.usage.total_tokens == theirs["usage"]["prompt_tokens"]
    assert ours.object == "list" and ours.model == _model_id(gguf)


def test_the_response_is_openais_shape_exactly(gguf: str) -> None:
    body = _post(gguf, {"input": ["a", "b"]}).json()
    assert set(body) == {"object", "data", "model", "usage"}
    assert set(body["usage"]) == {"prompt_tokens", "total_tokens"}
    assert [set(d) for d in body["data"]] == [{"object", "index", "embedding"}] * 2
    assert [d["object"] for d in body["data"]] == ["embedding", "embedding"]


def test_base64_decodes_to_the_float_vector(gguf: str) -> None:
    """llama.cpp: test_embedding_openai_library_base64 (here exactly equal, not within 1e-3)."""
    client = _client(gguf)
    floats = client.embeddings.create(model="", input=LIFE, encoding_format="float").data[0].embedding
    raw = client.embeddings.create(model="", input=LIFE, encoding_format="base64").data[0].embedding
    assert isinstance(raw, str)
    decoded = struct.unpack(f"<{len(floats)}f", base64.b64decode(raw))
    assert list(decoded) == floats
    # the SDK's default asks for base64 and decodes it itself
    assert client.embeddings.create(model="", input=LIFE).data[0].embedding == floats


def test_a_list_answers_each_input_at_its_index_as_alone(gguf: str) -> None:
    """llama.cpp: test_embedding_multiple, test_embedding_openai_library_multiple."""
    client = _client(gguf)
    together = client.embeddings.create(model="", input=FOUR[::-1], encoding_format="float").data
    for item in together:
        alone = client.embeddings.create(model="", input=FOUR[::-1][item.index], encoding_format="float")
        assert np.allclose(item.embedding, alone.data[0].embedding, atol=1e-6)


def test_token_arrays_give_the_texts_vectors(gguf: str, reference: Any) -> None:
    client = _client(gguf)
    ids = [reference.tokenize(t.encode()) for t in FOUR[:2]]
    texts = client.embeddings.create(model="", input=FOUR[:2], encoding_format="float")
    one = client.embeddings.create(model="", input=ids[0], encoding_format="float")
    many = client.embeddings.create(model="", input=ids, encoding_format="float")
    assert np.allclose(one.data[0].embedding, texts.data[0].embedding, atol=1e-6)
    assert np.allclose([d.embedding for d in many.data], [d.embedding for d in texts.data], atol=1e-6)
    assert many.usage.prompt_tokens == sum(map(len, ids)) == texts.usage.prompt_tokens


def test_the_same_input_gives_the_same_vector(gguf: str) -> None:
    """llama.cpp: test_same_prompt_give_same_result (here bit for bit, and across requests)."""
    first = _post(gguf, {"input": [LIFE] * 5}).json()["data"]
    again = _post(gguf, {"input": [LIFE] * 5}).json()["data"]
    assert all(d["embedding"] == first[0]["embedding"] for d in first + again)


def test_usage_counts_the_models_tokens(gguf: str, reference: Any) -> None:
    """llama.cpp: test_embedding_usage_single, test_embedding_usage_multiple."""
    n = len(reference.tokenize(LIFE.encode()))
    for asked, tokens in ((LIFE, n), ([LIFE, LIFE], 2 * n)):
        usage = _post(gguf, {"input": asked}).json()["usage"]
        assert usage == {"prompt_tokens": tokens, "total_tokens": tokens}


def test_inputs_near_the_batch_size_and_the_empty_string(gguf: str) -> None:
    """llama.cpp: test_embedding_multiple_with_fa (its inputs) and test_embedding_mixed_input's
    empty string (the model's own [CLS] [SEP] make it two tokens: not a crash, a vector)."""
    body = _post(gguf, {"input": ["a " * 253, "b " * 254, "c " * 255, "d " * 256, ""]}).json()
    assert [d["index"] for d in body["data"]] == [0, 1, 2, 3, 4]
    assert np.allclose(np.linalg.norm([d["embedding"] for d in body["data"]], axis=1), 1.0, atol=EPSILON)


def test_dimensions_are_refused_on_a_model_not_trained_for_them(gguf: str) -> None:
    full = _post(gguf, {"input": LIFE}).json()["data"][0]["embedding"]
    same = _post(gguf, {"input": LIFE, "dimensions": len(full)}).json()["data"][0]["embedding"]
    assert same == full
    refused = _post(gguf, {"input": LIFE, "dimensions": 8})
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "dimensions_unsupported"
    assert "not trained" in refused.json()["error"]["message"]


@pytest.mark.parametrize("body, status, code", [
    ({"input": "This is a test " * 512}, 400, "context_length_exceeded"),  # llama.cpp: test_embedding_error_prompt_too_long
    ({"input": []}, 400, None),  # llama.cpp: test_embedding_invalid_input
    ({"input": {"content": "string"}}, 400, "invalid_value"),  # llama.cpp: test_embedding_invalid_input
    ({"input": {"content": [{"type": "unknown"}]}}, 400, "invalid_value"),  # llama.cpp: the same
    ({"input": {"content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}},
     400, "invalid_value"),  # llama.cpp: the same (not multimodal)
    ({"input": {"prompt_string": "string"}}, 400, "invalid_value"),  # llama.cpp's own object input
    ({"input": ["string1", [12, 34, 56]]}, 400, "invalid_value"),  # mixed: OpenAI's API has no such input
    ({"input": [99999]}, 400, "invalid_token"),
    ({"input": [-1]}, 400, "invalid_token"),
    ({"input": [[]]}, 400, "empty_input"),
    ({"input": [1.5]}, 400, "invalid_value"),
    ({"input": None}, 400, "invalid_value"),
    ({}, 400, "invalid_value"),
    ({"input": "x", "encoding_format": "int8"}, 400, "invalid_value"),
    ({"input": "x", "dimensions": 0}, 400, "invalid_value"),
    ({"input": "x", "dimensions": 10_000}, 400, "invalid_value"),
    ({"input": "x", "model": "text-embedding-4-huge"}, 404, "model_not_found"),
    ({"input": "x", "model": "SmolLM2-135M-Instruct.Q4_1"}, 400, "model_cannot_embed"),
    ({"input": "x", "pooling": "none"}, 400, "unknown_field"),
    ({"input": ["x"] * 2049}, 400, None),
])  # fmt: skip
def test_bad_inputs_are_4xx_with_a_reason(gguf: str, body: Any, status: int, code: str | None) -> None:
    answer = _post(gguf, body)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error["message"] and error["code"] == code and error["type"] == "invalid_request_error"
    if code == "context_length_exceeded":
        assert "too large" in error["message"] and "512" in error["message"]


def test_a_name_clients_hardcode_is_answered_by_the_embedding_model_and_said(gguf: str) -> None:
    answer = _post(gguf, {"input": "hello", "model": "text-embedding-3-small"})
    assert answer.status_code == 200, answer.text
    name = answer.json()["model"]
    assert answer.headers["X-Harmony-Desk-Warning"] == (
        f"model text-embedding-3-small is answered by {name}: its vectors, not OpenAI's")


def test_the_unprefixed_path_answers_too(gguf: str) -> None:
    assert _post(gguf, {"input": "hello"}, "/embeddings").json()["data"][0]["index"] == 0


def test_clients_at_once_each_get_their_own_vectors(gguf: str) -> None:
    alone = [_post(gguf, {"input": text}).json()["data"][0]["embedding"] for text in FOUR]
    with cf.ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda i: _post(gguf, {"input": FOUR[i % 4]}).json(), range(16)))
    assert [t["data"][0]["embedding"] for t in together] == [alone[i % 4] for i in range(16)]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(field=st.sampled_from(["input", "model", "encoding_format", "dimensions", "user", "extra"]), value=_JSON)
def test_no_body_is_a_server_error(gguf: str, field: str, value: Any) -> None:
    answer = _post(gguf, {"input": ["hello", "world"], field: value})
    assert answer.status_code in (200, 400, 404), answer.text
    if answer.status_code != 200:
        assert answer.json()["error"]["message"]


# --- the worker, for each pooling the GGUF may name ---------------------------------------------


@pytest.mark.parametrize("pooling", ["mean", "cls", "last"])
def test_pooling_is_as_the_gguf_says(pooling: str) -> None:
    """llama.cpp: test_embedding_pooling_mean, test_embedding_single (pooling last): the
    vector is the mean, the first or the last of llama.cpp's own per-token vectors, normalised,
    and equal to llama-cpp-python's `create_embedding` on the file."""
    path = tiny_embedding.build(pooling)
    client = EmbeddingClient()
    try:
        facts = client.load_embedding_model(path, n_threads=1)
        done = client.embed([LIFE, "hello world"])
    finally:
        client.close()
    assert isinstance(done, Embedded) and facts.dims == done.dims == tiny_embedding.N_EMBD
    ours = np.frombuffer(done.vectors, dtype="<f4").reshape(2, done.dims)
    tokens = llama_cpp.Llama(str(path), embedding=True, pooling_type=0, verbose=False)
    per_token = np.array(tokens.embed(LIFE))
    pooled = {"mean": per_token.mean(axis=0), "cls": per_token[0], "last": per_token[-1]}[pooling]
    assert np.allclose(ours[0], _unit(pooled), atol=1e-5)
    whole = llama_cpp.Llama(str(path), embedding=True, verbose=False)
    assert np.allclose(ours, _unit([whole.embed(LIFE), whole.embed("hello world")]), atol=1e-6)
    assert done.tokens == (len(per_token), len(whole.tokenize(b"hello world")))


def test_a_killed_embedding_worker_is_an_error_then_started_again() -> None:
    """The abort of a model stays in its worker: the call that sees it fails as a `WorkerError`
    (the server answers 503), the next one starts a new worker and loads the model again."""
    client = EmbeddingClient()
    try:
        client.load_embedding_model(tiny_embedding.build("mean"), n_threads=1)
        before = client.embed([LIFE])
        assert client.pid is not None
        os.kill(client.pid, signal.SIGKILL)
        with pytest.raises(WorkerError):
            client.embed([LIFE])
        assert client.embed([LIFE]) == before
    finally:
        client.close()


def test_a_gguf_that_pools_nothing_is_refused_at_load() -> None:
    """llama.cpp: test_embedding_pooling_none_oai — /v1/embeddings cannot serve pooling none;
    here `serve` refuses such a model when it loads, with the reason."""
    client = EmbeddingClient()
    try:
        with pytest.raises(ModelLoadError, match="pooling none"):
            client.load_embedding_model(tiny_embedding.build("none"), n_threads=1)
    finally:
        client.close()


# --- WordLlama, with no embedding model chosen --------------------------------------------------


def test_wordllama_is_served_and_named_when_no_model_is_chosen(wordllama: str) -> None:
    from app.documents.embed import NAME, embed

    client = _client(wordllama)
    assert NAME in [m.id for m in client.models.list().data]
    got = client.embeddings.create(model=NAME, input=FOUR, encoding_format="float")
    assert got.model == NAME and [d.index for d in got.data] == [0, 1, 2, 3]
    assert np.allclose([d.embedding for d in got.data], embed(FOUR), atol=1e-6)
    raw = client.embeddings.create(model=NAME, input=LIFE, encoding_format="base64").data[0].embedding
    assert isinstance(raw, str)
    assert list(np.frombuffer(base64.b64decode(raw), "<f4")) == got.data[0].embedding
    assert got.usage.prompt_tokens == got.usage.total_tokens > 0


def test_wordllama_cuts_dimensions_and_renormalises(wordllama: str) -> None:
    full = np.array(_post(wordllama, {"input": LIFE}).json()["data"][0]["embedding"])
    cut = np.array(_post(wordllama, {"input": LIFE, "dimensions": 64}).json()["data"][0]["embedding"])
    assert cut.shape == (64,) and np.allclose(cut, _unit(full[:64]), atol=1e-6)
    assert _post(wordllama, {"input": LIFE, "dimensions": 257}).status_code == 400


@pytest.mark.parametrize("body, code", [
    ({"input": [12, 34, 56]}, "token_input_unsupported"),
    ({"input": [[12, 34], [56]]}, "token_input_unsupported"),
    ({"input": ""}, "empty_input"),
    ({"input": "word " * 3000}, "context_length_exceeded"),
])  # fmt: skip
def test_wordllama_refuses_with_a_reason(wordllama: str, body: Any, code: str) -> None:
    answer = _post(wordllama, body)
    assert answer.status_code == 400 and answer.json()["error"]["code"] == code
    if code == "token_input_unsupported":
        assert "token" in answer.json()["error"]["message"]


def test_refusals_are_values_not_exceptions() -> None:
    from app.documents.embedder import WordLlamaEmbedder

    refused = WordLlamaEmbedder().embed(["fine", (1, 2)])
    assert isinstance(refused, NotEmbedded) and refused.index == 1 and refused.why is Refusal.NO_TOKEN_IDS
