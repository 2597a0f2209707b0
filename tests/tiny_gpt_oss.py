"""Build a tiny, random-weight GGUF of llama.cpp's `gpt-oss` architecture for tests.

It carries the full o200k_harmony vocabulary (tokens in GPT-2 byte→unicode form, BPE merges
derived from the ranks), so llama.cpp runs the real gpt-oss code path: attention sinks,
sliding-window and full layers, YaRN RoPE, MoE with biases, the Harmony special tokens and
end-of-generation ids. Deterministic: the same arguments give the same bytes. Built files are
cached by a key of their arguments in `HARMONY_DESK_TEST_CACHE` (default
~/.cache/harmony-desk-tests; the test session sets it to its own folder, removed when it ends:
see tests/session_dirs.py); processes building the same file at once build it once.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Collection
from pathlib import Path

import numpy as np

from app.harmony.encoding import (
    N_VOCAB,
    START_OF_TEXT,
    default_vocab_path,
    read_ranks,
    special_tokens,
)
from tests.session_dirs import build_once

BUILDER_VERSION = 1
N_EMBD, N_HEAD, N_HEAD_KV, HEAD_DIM, N_FF, N_EXPERT, N_LAYER = 64, 2, 1, 64, 64, 4, 2


def cache_dir() -> Path:
    root = os.environ.get("HARMONY_DESK_TEST_CACHE") or Path.home() / ".cache" / "harmony-desk-tests"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _byte_encoder() -> dict[int, str]:
    visible = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars = list(visible)
    n = 0
    for b in range(256):
        if b not in visible:
            visible.append(b)
            chars.append(256 + n)
            n += 1
    return dict(zip(visible, map(chr, chars), strict=True))


def _merge_for(token: bytes, rank: int, ranks: dict[bytes, int]) -> tuple[bytes, bytes]:
    """The pair tiktoken's BPE reaches last when it builds `token` from lower ranks."""
    splits = [(token[:i], token[i:]) for i in range(1, len(token))]
    ok = [s for s in splits if ranks.get(s[0], rank) < rank and ranks.get(s[1], rank) < rank]
    if len(ok) == 1:
        return ok[0]
    parts = [bytes([b]) for b in token]
    while len(parts) > 2:
        best, best_rank = -1, rank
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1], rank)
            if r < best_rank:
                best, best_rank = i, r
        if best < 0:
            break
        parts[best : best + 2] = [parts[best] + parts[best + 1]]
    if len(parts) == 2:
        return parts[0], parts[1]
    return min(ok, key=lambda s: max(ranks[s[0]], ranks[s[1]]))


@functools.cache
def vocabulary() -> tuple[list[str], list[int], list[str]]:
    """Tokens, token types and merges of o200k_harmony in GGUF's gpt2 tokenizer form (worked out
    once per process: about 2.5 s)."""
    ranks = read_ranks(default_vocab_path())
    enc = _byte_encoder()
    by_rank = sorted(ranks.items(), key=lambda kv: kv[1])
    tokens = ["".join(enc[b] for b in token) for token, _ in by_rank]
    specials = {rank: text for text, rank in special_tokens().items()}
    tokens += [specials[r] for r in range(START_OF_TEXT, N_VOCAB)]
    types = [1] * START_OF_TEXT + [3] * (N_VOCAB - START_OF_TEXT)
    merges = []
    for token, rank in by_rank:
        if len(token) > 1:
            a, b = _merge_for(token, rank, ranks)
            merges.append("".join(enc[x] for x in a) + " " + "".join(enc[x] for x in b))
    return tokens, types, merges


def _tensors(rng: np.random.Generator) -> dict[str, np.ndarray]:
    def normal(shape: tuple[int, ...], sigma: float = 0.02) -> np.ndarray:
        return (rng.standard_normal(shape) * sigma).astype(np.float32)

    out = {
        "token_embd.weight": normal((N_VOCAB, N_EMBD), 1.0).astype(np.float16),
        "output_norm.weight": np.ones(N_EMBD, np.float32),
        "output.weight": normal((N_VOCAB, N_EMBD), 0.5).astype(np.float16),
    }
    q, kv = N_HEAD * HEAD_DIM, N_HEAD_KV * HEAD_DIM
    for layer in range(N_LAYER):
        p = f"blk.{layer}."
        out |= {
            p + "attn_norm.weight": np.ones(N_EMBD, np.float32),
            p + "post_attention_norm.weight": np.ones(N_EMBD, np.float32),
            p + "attn_q.weight": normal((q, N_EMBD)), p + "attn_q.bias": normal((q,)),
            p + "attn_k.weight": normal((kv, N_EMBD)), p + "attn_k.bias": normal((kv,)),
            p + "attn_v.weight": normal((kv, N_EMBD)), p + "attn_v.bias": normal((kv,)),
            p + "attn_output.weight": normal((N_EMBD, q)), p + "attn_output.bias": normal((N_EMBD,)),
            p + "attn_sinks.weight": normal((N_HEAD,), 1.0),
            p + "ffn_gate_inp.weight": normal((N_EXPERT, N_EMBD), 0.5), p + "ffn_gate_inp.bias": normal((N_EXPERT,)),
            p + "ffn_gate_exps.weight": normal((N_EXPERT, N_FF, N_EMBD)), p + "ffn_gate_exps.bias": normal((N_EXPERT, N_FF)),
            p + "ffn_up_exps.weight": normal((N_EXPERT, N_FF, N_EMBD)), p + "ffn_up_exps.bias": normal((N_EXPERT, N_FF)),
            p + "ffn_down_exps.weight": normal((N_EXPERT, N_EMBD, N_FF)), p + "ffn_down_exps.bias": normal((N_EXPERT, N_EMBD)),
        }
    return out


def _write(path: Path, seed: int, drop: Collection[str], split_max_tensors: int = 0,
           chat_template: str | None = None) -> None:
    """Write the model; `drop` names tensors or metadata keys (without the arch prefix) to leave
    out; `split_max_tensors` > 0 writes llama.cpp's split files (`-00001-of-0000N.gguf`)."""
    import gguf

    tokens, types, merges = vocabulary()
    w = gguf.GGUFWriter(str(path), arch="gpt-oss", split_max_tensors=split_max_tensors)
    a = "gpt-oss."
    real_add_uint32 = w.add_uint32

    def add_uint32(key: str, value: int) -> None:
        if key.removeprefix(a) not in drop:
            real_add_uint32(key, value)

    w.add_uint32 = add_uint32  # type: ignore[method-assign]
    w.add_string("general.name", "tiny-gpt-oss-test")
    if chat_template is not None:
        w.add_chat_template(chat_template)
    w.add_uint32(a + "context_length", 131072)
    w.add_uint32(a + "embedding_length", N_EMBD)
    w.add_uint32(a + "block_count", N_LAYER)
    w.add_uint32(a + "feed_forward_length", N_FF)
    w.add_uint32(a + "attention.head_count", N_HEAD)
    w.add_uint32(a + "attention.head_count_kv", N_HEAD_KV)
    w.add_uint32(a + "attention.key_length", HEAD_DIM)
    w.add_uint32(a + "attention.value_length", HEAD_DIM)
    w.add_uint32(a + "rope.dimension_count", HEAD_DIM)
    w.add_float32(a + "rope.freq_base", 150000.0)
    w.add_float32(a + "attention.layer_norm_rms_epsilon", 1e-5)
    w.add_uint32(a + "expert_count", N_EXPERT)
    w.add_uint32(a + "expert_used_count", 2)
    w.add_uint32(a + "expert_feed_forward_length", N_FF)
    w.add_uint32(a + "attention.sliding_window", 128)
    w.add_string(a + "rope.scaling.type", "yarn")
    w.add_float32(a + "rope.scaling.factor", 32.0)
    w.add_uint32(a + "rope.scaling.original_context_length", 4096)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-4o")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(199998)
    w.add_eos_token_id(200002)
    w.add_pad_token_id(199999)
    w.add_add_bos_token(False)
    for name, array in _tensors(np.random.default_rng(seed)).items():
        if name not in drop:
            w.add_tensor(name, array)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def build(seed: int = 1234, drop: Collection[str] = (), chat_template: str | None = None) -> Path:
    """The path of a tiny gpt-oss GGUF (built once per argument set, then cached); a
    `chat_template` is stored as the file's own Jinja template."""
    extra = "" if chat_template is None else f":{chat_template}"
    key = hashlib.sha256(f"{BUILDER_VERSION}:{seed}:{sorted(drop)}{extra}".encode()).hexdigest()[:16]
    path = cache_dir() / f"tiny-gpt-oss-{key}.gguf"
    return build_once(path, lambda partial: _write(partial, seed, drop, chat_template=chat_template))


def build_split(folder: Path, split_max_tensors: int = 12, seed: int = 1234) -> list[Path]:
    """The tiny model written as llama.cpp split files into `folder`; the parts, in order."""
    _write(folder / "tiny-split.gguf", seed, (), split_max_tensors)
    return sorted(folder.glob("tiny-split-*-of-*.gguf"))
