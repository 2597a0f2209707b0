"""The tiny qwen3 / llama3 / mistral GGUFs load in llama.cpp with their real tokenizers.

Each family's file carries the official chat template, tokenizes its markers to the real ids,
tokenizes plain text exactly as the real tokenizer does (llama.cpp's own test vectors; tiktoken
for Tekken), ends generation on the real end-of-generation ids, and decodes.
"""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path
from typing import Any

import llama_cpp
import pytest
import tiktoken
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from tests import tiny_models

# The turn markers each family's official template puts around one user message.
TURN_MARKERS = {
    "qwen3": ("<|im_start|>", "<|im_end|>"),
    "llama3": ("<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"),
    "mistral": ("<s>", "[INST]", "[/INST]"),
}


@pytest.fixture(scope="module", params=tiny_models.FAMILIES)
def family(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def llm(family: str) -> Any:
    return tiny_models.load(tiny_models.build(family), n_ctx=512)


def _ids(llm: Any, text: str, special: bool) -> list[int]:
    return list(llm.tokenize(text.encode(), add_bos=False, special=special))


def test_carries_the_official_chat_template(family: str, llm: Any) -> None:
    expected = (tiny_models.FIXTURES / tiny_models.spec(family).template).read_text("utf-8")
    assert llm.metadata["tokenizer.chat_template"] == expected
    assert tiny_models.template(family) == expected


def test_markers_are_single_tokens(family: str, llm: Any) -> None:
    for text, token in tiny_models.markers(family).items():
        assert _ids(llm, text, special=True) == [token], text
        assert llm.detokenize([token], special=True) == text.encode()


def test_bos_eos_and_end_of_generation(family: str, llm: Any) -> None:
    spec, vocab = tiny_models.spec(family), llm._model.vocab
    assert llama_cpp.llama_vocab_bos(vocab) == spec.bos
    assert llama_cpp.llama_vocab_eos(vocab) == spec.eos
    for token in spec.eog:
        assert llama_cpp.llama_vocab_is_eog(vocab, token), token
    for token in (spec.bos, *spec.markers.values()):
        if token not in spec.eog and token != spec.eos:
            assert not llama_cpp.llama_vocab_is_eog(vocab, token), token


def test_rendered_template_tokenizes_to_markers(family: str, llm: Any) -> None:
    formatter = Jinja2ChatFormatter(
        tiny_models.template(family),
        eos_token=llm.detokenize([llm.token_eos()], special=True).decode(),
        bos_token=llm.detokenize([llm.token_bos()], special=True).decode(),
    )
    prompt = formatter(messages=[{"role": "user", "content": "What time is it?"}]).prompt
    ids = _ids(llm, prompt, special=True)
    for marker in TURN_MARKERS[family]:
        assert tiny_models.markers(family)[marker] in ids, marker


def test_generates_tokens(family: str, llm: Any) -> None:
    prompt = llm.tokenize(b"Hello, world", add_bos=True, special=True)
    out = list(itertools.islice(llm.generate(prompt, temp=0.0), 8))
    assert len(out) == 8
    assert all(0 <= t < llm.n_vocab() for t in out)
    assert isinstance(llm.detokenize(out), bytes)


def _llama_cpp_vectors(name: str) -> list[tuple[str, list[int]]]:
    """llama.cpp's tokenizer test vectors (tests/test-tokenizer-0.cpp's format)."""
    folder = tiny_models.FIXTURES
    raw = (folder / f"ggml-vocab-{name}.gguf.inp").read_text("utf-8")
    texts = raw.split("\n__ggml_vocab_test__\n")
    if texts[-1] == "":
        texts.pop()
    ids = (folder / f"ggml-vocab-{name}.gguf.out").read_text("utf-8").splitlines()
    assert len(texts) == len(ids)
    return [(text, [int(t) for t in line.split()]) for text, line in zip(texts, ids, strict=True)]


@pytest.mark.parametrize(("family", "vectors"), [("qwen3", "qwen2"), ("llama3", "llama-bpe")])
def test_plain_text_tokenizes_as_the_real_tokenizer(family: str, vectors: str) -> None:
    model = tiny_models.load(tiny_models.build(family), n_ctx=64)
    for text, expected in _llama_cpp_vectors(vectors):
        assert _ids(model, text, special=False) == expected, repr(text)


def test_tekken_tokenizes_as_tiktoken_with_its_ranks() -> None:
    tekken = tiktoken.Encoding(
        "tekken_240718", pat_str=tiny_models.TEKKEN_PATTERN,
        mergeable_ranks=tiny_models.tekken_ranks(), special_tokens={},
    )
    model = tiny_models.load(tiny_models.build("mistral"), n_ctx=64)
    for text, _ in _llama_cpp_vectors("llama-bpe"):
        expected = [t + tiny_models.TEKKEN_N_SPECIAL for t in tekken.encode_ordinary(text)]
        assert _ids(model, text, special=False) == expected, repr(text)


def test_build_is_deterministic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cached = tiny_models.build("mistral")
    monkeypatch.setenv("HARMONY_DESK_TEST_CACHE", str(tmp_path))
    fresh = tiny_models.build("mistral")
    assert fresh.parent == tmp_path
    digest = [hashlib.sha256(path.read_bytes()).hexdigest() for path in (cached, fresh)]
    assert digest[0] == digest[1]


def test_unknown_family_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown family"):
        tiny_models.build("gemma")


def test_the_fast_metadata_reader_gives_what_gguf_reader_gives() -> None:
    """`tests/gguf_fields.py` (which the builders read vocabularies with) against the `gguf`
    package's reader, on the bundled SmolLM2: the same keys in order, values and types."""
    import gguf

    from app.library.bundled import default_model_path
    from tests.gguf_fields import read_fields

    theirs = {k: f for k, f in gguf.GGUFReader(default_model_path()).fields.items() if not k.startswith("GGUF.")}
    ours = read_fields(default_model_path())
    assert list(ours) == list(theirs) and len(ours["tokenizer.ggml.tokens"].value) == 49152
    for key, field in theirs.items():
        value = field.contents()
        assert ours[key].value == value and type(ours[key].value) is type(value), key
        assert ours[key].types == tuple(int(t) for t in field.types), key
