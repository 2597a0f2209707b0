"""Build tiny, random-weight GGUFs of Gemma 4 and Nemotron Nano v2 for tests (as
`tests/tiny_models.py` does for qwen3, llama3 and mistral, whose helpers this reuses).

Families:

- gemma4 (llama.cpp's `gemma4` architecture: sliding-window and full-attention layers, per-head
  q/k norms, post-attention and post-FFN norms, proportional RoPE factors on the full layers,
  final logit soft-capping): llama.cpp's `ggml-vocab-gemma-4.gguf` (the real Gemma 4 tokenizer,
  262,144 tokens) with every `tokenizer.ggml.*` key copied unchanged, and the official
  `google-gemma-4-31B-it.jinja`. Markers (`<|turn>` 105, `<turn|>` 106, `<|tool_call>` 48,
  `<|tool_response>` 50, `<|"|>` 52, `<|channel>` 100, ...) are the real tokens at their real ids.
- nemotron (llama.cpp's `nemotron_h`: Mamba-2, attention and squared-ReLU MLP layers, as
  NVIDIA-Nemotron-Nano-9B-v2 interleaves them) with `NVIDIA-Nemotron-Nano-v2.jinja`. Its
  tokenizer is Mistral NeMo's Tekken (the 131,072-token vocabulary the Nemotron-H family shares
  with Mistral NeMo: 1,000 control slots, then the same 130,072 byte-level BPE tokens), its
  control slots named as Nemotron-H names them: `<unk>` 0, `<s>` 1, `</s>` 2, every other id
  `<SPECIAL_{id}>`, so the template's `<SPECIAL_10>` (system), `<SPECIAL_11>` (user/assistant)
  and `<SPECIAL_12>` (end of turn, the model's eos) are one token each at their real ids.
  STAND-IN, said plainly: no copy of Nemotron Nano v2's own `tokenizer.json` was reachable
  from here, so the ids of its added text markers could not be checked. The builder makes
  `<think>`, `</think>`, `<TOOLCALL>`, `</TOOLCALL>`, `<AVAILABLE_TOOLS>`,
  `</AVAILABLE_TOOLS>`, `<TOOL_RESPONSE>` and `</TOOL_RESPONSE>` control tokens at the free
  slots 20..27 (`NEMOTRON_ADDED`); the BPE tokens, merges and the three `<SPECIAL_n>` turn
  markers are as the real model has them.

Guarantees (as tiny_models.py): the files load in llama.cpp (n_embd 64, two or three layers:
fast on one CPU thread); bos, eos and end-of-generation ids are those of the real models; every
marker in `markers(family)` is one token at its id. Deterministic: the same arguments give the
same bytes. Built files are cached by a key of their arguments and BUILDER_VERSION in
`cache_dir()`.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from tests.gguf_fields import read_fields
from tests.tiny_gguf import (
    Family,
    TinyFamilies,
    Vocab,
    add_bpe_tokenizer,
    add_shape,
    decompressed,
    write_gguf,
)
from tests.tiny_models import tekken_vocab

BUILDER_VERSION = 1
FAMILIES = ("gemma4", "nemotron")
N_EMBD = 64
NEMOTRON_ADDED = {
    20: "<think>",
    21: "</think>",
    22: "<TOOLCALL>",
    23: "</TOOLCALL>",
    24: "<AVAILABLE_TOOLS>",
    25: "</AVAILABLE_TOOLS>",
    26: "<TOOL_RESPONSE>",
    27: "</TOOL_RESPONSE>",
}
# Nemotron-H's hybrid pattern, shortened: a Mamba-2 layer, an attention layer, an MLP layer.
NEMOTRON_LAYERS = ("mamba", "attention", "mlp")
SSM_INNER, SSM_STATE, SSM_HEADS, SSM_GROUPS, SSM_CONV = 128, 16, 8, 2, 4

SPECS: dict[str, Family] = {
    "gemma4": Family(
        "gemma4",
        "google-gemma-4-31B-it.jinja",
        "ggml-vocab-gemma-4.gguf.xz",
        "gemma4",
        bos=2,
        eos=1,
        add_bos=True,
        eog=frozenset({1, 50, 106}),
        markers={
            "<bos>": 2,
            "<eos>": 1,
            "<|tool>": 46,
            "<tool|>": 47,
            "<|tool_call>": 48,
            "<tool_call|>": 49,
            "<|tool_response>": 50,
            "<tool_response|>": 51,
            '<|"|>': 52,
            "<|think|>": 98,
            "<|channel>": 100,
            "<channel|>": 101,
            "<|turn>": 105,
            "<turn|>": 106,
        },
        n_head=2,
        n_head_kv=1,
        head_dim=32,
        tied=True,
        rope_base=1e6,
        context_length=262144,
    ),
    "nemotron": Family(
        "nemotron_h",
        "NVIDIA-Nemotron-Nano-v2.jinja",
        "tekken_240718.b64.xz",
        "tekken",
        bos=1,
        eos=12,
        add_bos=False,
        eog=frozenset({2, 12}),  # `</s>`: by its text
        markers={
            "<s>": 1,
            "</s>": 2,
            "<SPECIAL_10>": 10,
            "<SPECIAL_11>": 11,
            "<SPECIAL_12>": 12,
            **{text: i for i, text in NEMOTRON_ADDED.items()},
        },
        n_head=4,
        n_head_kv=2,
        head_dim=16,
        rope_base=10000.0,
        context_length=131072,
    ),
}


@functools.cache
def _gemma4_tokenizer() -> dict[str, Any]:
    """Every `tokenizer.ggml.*` value of llama.cpp's Gemma 4 vocabulary, unchanged."""
    fields = read_fields(decompressed(spec("gemma4").vocab_file))
    return {k: f.value for k, f in fields.items() if k.startswith("tokenizer.ggml.")}


@functools.cache
def nemotron_vocab() -> Vocab:
    """Tekken's BPE tokens and merges behind Nemotron-H's 1,000 named control slots."""
    return tekken_vocab({0: "<unk>", 1: "<s>", 2: "</s>", **NEMOTRON_ADDED})


def _normal(rng: np.random.Generator, shape: tuple[int, ...], sigma: float = 0.02) -> np.ndarray:
    return (rng.standard_normal(shape) * sigma).astype(np.float32)


def _ones(n: int) -> np.ndarray:
    return np.ones(n, np.float32)


# Gemma 4, shortened: a sliding-window layer (head size 16) then a full-attention one (32).
GEMMA4_SWA = (True, False)
GEMMA4_HEAD_SWA, GEMMA4_FF, GEMMA4_WINDOW = 16, 128, 512


def _gemma4_tensors(n_vocab: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    f = spec("gemma4")
    out = {
        "token_embd.weight": _normal(rng, (n_vocab, N_EMBD), 1.0).astype(np.float16),
        "output_norm.weight": _ones(N_EMBD),
        "rope_freqs.weight": _ones(f.head_dim // 2),  # proportional RoPE: all factors 1
    }
    for i, swa in enumerate(GEMMA4_SWA):
        hd, p = GEMMA4_HEAD_SWA if swa else f.head_dim, f"blk.{i}."
        q, kv = f.n_head * hd, f.n_head_kv * hd
        out |= {
            p + "attn_norm.weight": _ones(N_EMBD),
            p + "attn_q.weight": _normal(rng, (q, N_EMBD)),
            p + "attn_k.weight": _normal(rng, (kv, N_EMBD)),
            p + "attn_v.weight": _normal(rng, (kv, N_EMBD)),
            p + "attn_output.weight": _normal(rng, (N_EMBD, q)),
            p + "attn_q_norm.weight": _ones(hd),
            p + "attn_k_norm.weight": _ones(hd),
            p + "post_attention_norm.weight": _ones(N_EMBD),
            p + "ffn_norm.weight": _ones(N_EMBD),
            p + "ffn_gate.weight": _normal(rng, (GEMMA4_FF, N_EMBD)),
            p + "ffn_up.weight": _normal(rng, (GEMMA4_FF, N_EMBD)),
            p + "ffn_down.weight": _normal(rng, (N_EMBD, GEMMA4_FF)),
            p + "post_ffw_norm.weight": _ones(N_EMBD),
        }
    return out


def _gemma4_metadata(w: Any) -> None:
    f, a = spec("gemma4"), "gemma4."
    add_shape(w, f, len(GEMMA4_SWA), N_EMBD, GEMMA4_FF, f.n_head_kv)
    w.add_uint32(a + "attention.key_length_swa", GEMMA4_HEAD_SWA)
    w.add_uint32(a + "attention.value_length_swa", GEMMA4_HEAD_SWA)
    w.add_uint32(a + "rope.dimension_count", f.head_dim)
    w.add_uint32(a + "rope.dimension_count_swa", GEMMA4_HEAD_SWA)
    w.add_float32(a + "rope.freq_base", f.rope_base)
    w.add_float32(a + "rope.freq_base_swa", 10000.0)
    w.add_float32(a + "attention.layer_norm_rms_epsilon", 1e-6)
    w.add_uint32(a + "attention.sliding_window", GEMMA4_WINDOW)
    w.add_array(a + "attention.sliding_window_pattern", list(GEMMA4_SWA))
    w.add_uint32(a + "attention.shared_kv_layers", 0)
    w.add_uint32(a + "embedding_length_per_layer_input", 0)
    w.add_float32(a + "final_logit_softcapping", 30.0)


def _gemma4_tokenizer_keys(w: Any) -> int:
    """Write the real tokenizer; the vocabulary's size."""
    t = _gemma4_tokenizer()
    w.add_tokenizer_model(str(t["tokenizer.ggml.model"]))
    w.add_token_list(list(t["tokenizer.ggml.tokens"]))
    w.add_token_scores([float(s) for s in t["tokenizer.ggml.scores"]])
    w.add_token_types([int(x) for x in t["tokenizer.ggml.token_type"]])
    w.add_token_merges(list(t["tokenizer.ggml.merges"]))
    for name in ("bos", "eos", "unknown", "padding", "mask"):
        w.add_uint32(f"tokenizer.ggml.{name}_token_id", int(t[f"tokenizer.ggml.{name}_token_id"]))
    w.add_add_space_prefix(bool(t["tokenizer.ggml.add_space_prefix"]))
    w.add_add_bos_token(bool(t["tokenizer.ggml.add_bos_token"]))
    return len(t["tokenizer.ggml.tokens"])


def _nemotron_tensors(n_vocab: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    f = spec("nemotron")
    d_conv_in = SSM_INNER + 2 * SSM_GROUPS * SSM_STATE
    d_in_proj = 2 * SSM_INNER + 2 * SSM_GROUPS * SSM_STATE + SSM_HEADS
    out = {
        "token_embd.weight": _normal(rng, (n_vocab, N_EMBD), 1.0).astype(np.float16),
        "output_norm.weight": _ones(N_EMBD),
        "output.weight": _normal(rng, (n_vocab, N_EMBD), 0.5).astype(np.float16),
    }
    q, kv = f.n_head * f.head_dim, f.n_head_kv * f.head_dim
    for i, kind in enumerate(NEMOTRON_LAYERS):
        p = f"blk.{i}."
        out[p + "attn_norm.weight"] = _ones(N_EMBD)
        if kind == "mamba":
            out |= {
                p + "ssm_in.weight": _normal(rng, (d_in_proj, N_EMBD)),
                p + "ssm_conv1d.weight": _normal(rng, (d_conv_in, SSM_CONV), 0.5),
                p + "ssm_conv1d.bias": _normal(rng, (d_conv_in,)),
                p + "ssm_dt.bias": _normal(rng, (SSM_HEADS,)),
                p + "ssm_a": -np.exp(_normal(rng, (SSM_HEADS, 1), 0.5)),
                p + "ssm_d": np.ones((SSM_HEADS, 1), np.float32),
                p + "ssm_norm.weight": np.ones((SSM_GROUPS, SSM_INNER // SSM_GROUPS), np.float32),
                p + "ssm_out.weight": _normal(rng, (N_EMBD, SSM_INNER)),
            }
        elif kind == "attention":
            out |= {
                p + "attn_q.weight": _normal(rng, (q, N_EMBD)),
                p + "attn_k.weight": _normal(rng, (kv, N_EMBD)),
                p + "attn_v.weight": _normal(rng, (kv, N_EMBD)),
                p + "attn_output.weight": _normal(rng, (N_EMBD, q)),
            }
        else:
            out[p + "ffn_up.weight"] = _normal(rng, (2 * N_EMBD, N_EMBD))
            out[p + "ffn_down.weight"] = _normal(rng, (N_EMBD, 2 * N_EMBD))
    return out


def _nemotron_metadata(w: Any) -> None:
    f, a = spec("nemotron"), "nemotron_h."
    ff = [2 * N_EMBD if k == "mlp" else 0 for k in NEMOTRON_LAYERS]
    kv = [f.n_head_kv if k == "attention" else 0 for k in NEMOTRON_LAYERS]
    add_shape(w, f, len(NEMOTRON_LAYERS), N_EMBD, ff, kv)
    w.add_uint32(a + "rope.dimension_count", f.head_dim)
    w.add_float32(a + "rope.freq_base", f.rope_base)
    w.add_float32(a + "attention.layer_norm_epsilon", 1e-5)
    w.add_float32(a + "attention.layer_norm_rms_epsilon", 1e-5)
    w.add_uint32(a + "ssm.conv_kernel", SSM_CONV)
    w.add_uint32(a + "ssm.inner_size", SSM_INNER)
    w.add_uint32(a + "ssm.state_size", SSM_STATE)
    w.add_uint32(a + "ssm.time_step_rank", SSM_HEADS)
    w.add_uint32(a + "ssm.group_count", SSM_GROUPS)


def _nemotron_tokenizer_keys(w: Any) -> int:
    vocab = nemotron_vocab()
    add_bpe_tokenizer(w, spec("nemotron"), vocab, (("unknown", 0),))
    return len(vocab.tokens)


def _write(path: Path, family: str, seed: int, chat_template: str) -> None:
    gemma = family == "gemma4"
    metadata = _gemma4_metadata if gemma else _nemotron_metadata
    tokenizer = _gemma4_tokenizer_keys if gemma else _nemotron_tokenizer_keys
    n_vocab = (
        len(_gemma4_tokenizer()["tokenizer.ggml.tokens"]) if gemma else len(nemotron_vocab().tokens)
    )
    rng = np.random.default_rng(seed)
    tensors = (_gemma4_tensors if gemma else _nemotron_tensors)(n_vocab, rng)

    def keys(w: Any) -> None:
        metadata(w)
        assert tokenizer(w) == n_vocab
        w.add_uint32(spec(family).arch + ".vocab_size", n_vocab)

    write_gguf(path, family, spec(family), keys, chat_template, tensors)


FAMILY_SET = TinyFamilies(SPECS, BUILDER_VERSION, _write)
spec, template, markers, build = (
    FAMILY_SET.spec,
    FAMILY_SET.template,
    FAMILY_SET.markers,
    FAMILY_SET.build,
)
