"""Build tiny, random-weight GGUFs of three llama.cpp model families for tests.

Families: `qwen3` (llama.cpp's `qwen3` architecture), `llama3` and `mistral` (both `llama`).
Each file carries its family's real tokenizer and official chat template, read from
`tests/fixtures/tiny_models/` (see the README there for where every file came from):

- qwen3: llama.cpp's Qwen2 vocabulary with the 23 added tokens of Qwen2.5/Qwen3 at their real ids
  (`<tool_call>` 151657, `<think>` 151667, ...), `Qwen-Qwen3-0.6B.jinja`; tied embeddings, as
  Qwen3-0.6B.
- llama3: llama.cpp's Llama 3 vocabulary with the special tokens renamed as in Llama 3.1
  (`<|eom_id|>` 128008, `<|python_tag|>` 128010, ...), `meta-llama-Llama-3.1-8B-Instruct.jinja`.
- mistral: Mistral NeMo's Tekken tokenizer (`tekken_240718` from mistral-common: 1,000 control
  tokens, then 130,072 byte-level BPE tokens, merges derived as llama.cpp's converter does),
  `mistralai-Mistral-Nemo-Instruct-2407.jinja`; head size != n_embd / n_head, as NeMo.

Guarantees: the files load in llama.cpp (n_embd 64, two layers: fast on one CPU thread); bos, eos
and end-of-generation ids are those of the real models; every marker in `markers(family)` is one
token at that id. Deterministic: the same arguments give the same bytes. Built files are cached by
a key of their arguments and BUILDER_VERSION in `cache_dir()` (as tiny_gpt_oss.py); the steps
every tiny family's file shares are in `tests/tiny_gguf.py`.
"""

from __future__ import annotations

import base64
import functools
import lzma
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tests.gguf_fields import read_fields
from tests.tiny_gguf import (
    FIXTURES,
    Family,
    TinyFamilies,
    Vocab,
    add_bpe_tokenizer,
    add_shape,
    decompressed,
    write_gguf,
)
from tests.tiny_gpt_oss import _byte_encoder

BUILDER_VERSION = 1
FAMILIES = ("qwen3", "llama3", "mistral")
N_EMBD, N_FF, N_LAYER = 64, 128, 2
NORMAL, CONTROL, USER_DEFINED, UNUSED = 1, 3, 4, 5  # gguf.TokenType values

# fmt: off
# Qwen2.5/Qwen3 added tokens after <|im_end|> (tokenizer_config.json's added_tokens_decoder);
# special=false there, so llama.cpp's converter types those not shaped <|...|> USER_DEFINED.
QWEN3_ADDED = (
    "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>",
    "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>",
    "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
    "<tool_response>", "</tool_response>", "<think>", "</think>",
)
# Llama 3.1's special tokens where they differ from Llama 3's (transformers'
# convert_llama_weights_to_hf "3.1"); from 128011 on: <|reserved_special_token_{id - 128008}|>.
LLAMA31_RENAMED = {
    128004: "<|finetune_right_pad_id|>", 128005: "<|reserved_special_token_2|>",
    128008: "<|eom_id|>", 128010: "<|python_tag|>",
}
# mistral-common's Tekkenizer.DEPRECATED_SPECIAL_TOKENS (tokenizers up to v7 carry none in the
# file); ids 20..999 are <SPECIAL_{id}>.
TEKKEN_SPECIALS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)
# fmt: on
TEKKEN_N_SPECIAL = 1000
# tekken_240718.json's config.pattern: the pre-tokenizer llama.cpp runs as pre="tekken".
TEKKEN_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|"
    r"\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


SPECS: dict[str, Family] = {
    "qwen3": Family(
        "qwen3",
        "Qwen-Qwen3-0.6B.jinja",
        "ggml-vocab-qwen2.gguf.xz",
        "qwen2",
        bos=151643,
        eos=151645,
        add_bos=False,
        eog=frozenset({151643, 151645}),
        markers={
            "<|im_start|>": 151644,
            "<|im_end|>": 151645,
            "<tool_call>": 151657,
            "</tool_call>": 151658,
            "<think>": 151667,
            "</think>": 151668,
            "<|endoftext|>": 151643,
        },
        tied=True,
        rope_base=1e6,
        context_length=40960,
        extra_ids=(("padding", 151643),),
    ),
    "llama3": Family(
        "llama",
        "meta-llama-Llama-3.1-8B-Instruct.jinja",
        "ggml-vocab-llama-bpe.gguf.xz",
        "llama-bpe",
        bos=128000,
        eos=128009,
        add_bos=True,
        eog=frozenset({128001, 128008, 128009}),
        markers={
            "<|begin_of_text|>": 128000,
            "<|end_of_text|>": 128001,
            "<|start_header_id|>": 128006,
            "<|end_header_id|>": 128007,
            "<|eom_id|>": 128008,
            "<|eot_id|>": 128009,
            "<|python_tag|>": 128010,
        },
        rope_base=500000.0,
        context_length=131072,
        extra_ids=(("eot", 128009), ("eom", 128008)),
    ),
    "mistral": Family(
        "llama",
        "mistralai-Mistral-Nemo-Instruct-2407.jinja",
        "tekken_240718.b64.xz",
        "tekken",
        bos=1,
        eos=2,
        add_bos=True,
        eog=frozenset({2}),
        markers={
            "<s>": 1,
            "</s>": 2,
            "[INST]": 3,
            "[/INST]": 4,
            "[AVAILABLE_TOOLS]": 5,
            "[/AVAILABLE_TOOLS]": 6,
            "[TOOL_RESULTS]": 7,
            "[/TOOL_RESULTS]": 8,
            "[TOOL_CALLS]": 9,
        },
        head_dim=32,
        rope_base=1e6,
        context_length=1024000,
        extra_ids=(("unk", 0),),
    ),
}
# fmt: on


def _llama_cpp_vocab(family: str) -> Vocab:
    """The family's vocab-only GGUF from llama.cpp's models/ folder (stored xz-compressed)."""
    fields = read_fields(decompressed(spec(family).vocab_file))
    return Vocab(
        str(fields["tokenizer.ggml.model"].value),
        list(fields["tokenizer.ggml.tokens"].value),
        [int(t) for t in fields["tokenizer.ggml.token_type"].value],
        list(fields["tokenizer.ggml.merges"].value),
    )


def _qwen3_vocab() -> Vocab:
    base = _llama_cpp_vocab("qwen3")
    tokens, types = list(base.tokens), list(base.types)
    first = 151646
    for i, text in enumerate(QWEN3_ADDED, start=first):
        tokens[i] = text
        types[i] = CONTROL if text.startswith("<|") and text.endswith("|>") else USER_DEFINED
    for i in range(first + len(QWEN3_ADDED), len(tokens)):
        types[i] = UNUSED  # [PAD151669] ...: the model's rows past the tokenizer
    return Vocab(base.model, tokens, types, base.merges)


def _llama3_vocab() -> Vocab:
    base = _llama_cpp_vocab("llama3")
    tokens = list(base.tokens)
    for i in range(128011, len(tokens)):
        tokens[i] = f"<|reserved_special_token_{i - 128008}|>"
    for i, text in LLAMA31_RENAMED.items():
        tokens[i] = text
    return Vocab(base.model, tokens, base.types, base.merges)


def tekken_ranks() -> dict[bytes, int]:
    """Tekken's BPE ranks (ids without the 1,000 control tokens), as tiktoken takes them."""
    with lzma.open(FIXTURES / spec("mistral").vocab_file, "rt", encoding="ascii") as f:
        return {base64.b64decode(line): rank for rank, line in enumerate(f.read().split())}


def _tekken_merges(ranks: dict[bytes, int], enc: dict[int, str]) -> list[str]:
    """gguf-py's MistralVocab.extract_vocab_merges_from_model: every split of every token into
    two known tokens, ordered by the token's rank, then by the parts' ranks."""
    merges = []
    for token, _rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        splits = [(token[:j], token[j:]) for j in range(1, len(token))]
        valid = [s for s in splits if s[0] in ranks and s[1] in ranks]
        for left, right in sorted(valid, key=lambda s: (ranks[s[0]], ranks[s[1]])):
            merges.append("".join(enc[b] for b in left) + " " + "".join(enc[b] for b in right))
    return merges


def tekken_vocab(names: Mapping[int, str]) -> Vocab:
    """Tekken's BPE tokens and merges behind its 1,000 control slots, slot i named `names[i]`
    (`<SPECIAL_{i}>` when it names none)."""
    ranks = tekken_ranks()
    enc = _byte_encoder()
    specials = [names.get(i, f"<SPECIAL_{i}>") for i in range(TEKKEN_N_SPECIAL)]
    by_rank = sorted(ranks, key=ranks.__getitem__)
    tokens = specials + ["".join(enc[b] for b in token) for token in by_rank]
    types = [CONTROL] * TEKKEN_N_SPECIAL + [NORMAL] * len(by_rank)
    return Vocab("gpt2", tokens, types, _tekken_merges(ranks, enc))


@functools.cache
def vocabulary(family: str) -> Vocab:
    """The family's tokenizer in GGUF form (read once per process)."""
    spec(family)
    if family == "mistral":
        return tekken_vocab(dict(enumerate(TEKKEN_SPECIALS)))
    return {"qwen3": _qwen3_vocab, "llama3": _llama3_vocab}[family]()


def _tensors(f: Family, n_vocab: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    def normal(shape: tuple[int, ...], sigma: float = 0.02) -> np.ndarray:
        return (rng.standard_normal(shape) * sigma).astype(np.float32)

    out: dict[str, np.ndarray] = {
        "token_embd.weight": normal((n_vocab, N_EMBD), 1.0).astype(np.float16),
        "output_norm.weight": np.ones(N_EMBD, np.float32),
    }
    if not f.tied:
        out["output.weight"] = normal((n_vocab, N_EMBD), 0.5).astype(np.float16)
    q, kv = f.n_head * f.head_dim, f.n_head_kv * f.head_dim
    for layer in range(N_LAYER):
        p = f"blk.{layer}."
        block: dict[str, np.ndarray] = {
            p + "attn_norm.weight": np.ones(N_EMBD, np.float32),
            p + "attn_q.weight": normal((q, N_EMBD)),
            p + "attn_k.weight": normal((kv, N_EMBD)),
            p + "attn_v.weight": normal((kv, N_EMBD)),
            p + "attn_output.weight": normal((N_EMBD, q)),
            p + "ffn_norm.weight": np.ones(N_EMBD, np.float32),
            p + "ffn_gate.weight": normal((N_FF, N_EMBD)),
            p + "ffn_up.weight": normal((N_FF, N_EMBD)),
            p + "ffn_down.weight": normal((N_EMBD, N_FF)),
        }
        out |= block
        if f.arch == "qwen3":
            out[p + "attn_q_norm.weight"] = np.ones(f.head_dim, np.float32)
            out[p + "attn_k_norm.weight"] = np.ones(f.head_dim, np.float32)
    return out


def _keys(w: Any, f: Family, vocab: Vocab) -> None:
    a = f.arch + "."
    add_shape(w, f, N_LAYER, N_EMBD, N_FF, f.n_head_kv)
    w.add_uint32(a + "rope.dimension_count", f.head_dim)
    w.add_float32(a + "rope.freq_base", f.rope_base)
    w.add_float32(a + "attention.layer_norm_rms_epsilon", 1e-5)
    w.add_uint32(a + "vocab_size", len(vocab.tokens))
    add_bpe_tokenizer(w, f, vocab, f.extra_ids)


def _write(path: Path, family: str, seed: int, template: str) -> None:
    f, vocab = spec(family), vocabulary(family)
    tensors = _tensors(f, len(vocab.tokens), np.random.default_rng(seed))
    write_gguf(path, family, f, lambda w: _keys(w, f, vocab), template, tensors)


FAMILY_SET = TinyFamilies(SPECS, BUILDER_VERSION, _write)
spec, template, markers, build = (
    FAMILY_SET.spec,
    FAMILY_SET.template,
    FAMILY_SET.markers,
    FAMILY_SET.build,
)


def load(path: Path, n_ctx: int = 512, **kwargs: Any) -> Any:
    """`llama_cpp.Llama` on `path`: one thread, quiet, and with llama.cpp's CPU weight repacking
    ("extra buffers") off, as the app's worker loads models (repacking crashes on these CPUs)."""
    import llama_cpp
    import llama_cpp.llama_cpp as low_level

    original = low_level.llama_model_default_params

    def params() -> Any:
        p = original()
        p.use_extra_bufts = False
        return p

    low_level.llama_model_default_params = params
    try:
        options: dict[str, Any] = {"n_threads": 1, "n_threads_batch": 1, "verbose": False}
        return llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, **(options | kwargs))
    finally:
        low_level.llama_model_default_params = original
