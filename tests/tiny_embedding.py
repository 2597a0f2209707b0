"""Build a tiny, random-weight GGUF of llama.cpp's `bert` architecture: an embedding model.

A WordPiece vocabulary (GGUF's `bert` tokenizer, in the phantom-space form llama.cpp's converter
writes: a word is "▁word", a continuation is "word") of a few hundred English words, every
single letter and digit as a word and as a continuation (so any lowercase ASCII text tokenizes
without [UNK]), two layers, and the pooling its metadata names (`mean`, `cls` or `last`; `none`
for a model that cannot be served on /v1/embeddings). Deterministic: the same arguments give
the same bytes; files are cached as tests/tiny_gpt_oss.py caches its own (`build_once`).
"""

from __future__ import annotations

import hashlib
import string
from pathlib import Path

import numpy as np

from tests.session_dirs import build_once
from tests.tiny_gpt_oss import cache_dir

BUILDER_VERSION = 1
N_EMBD, N_HEAD, N_FF, N_LAYER, N_CTX = 32, 2, 64, 2, 512
MINILM = (384, 6, 1536, 6)  # all-MiniLM-L6's shape (n_embd, heads, n_ff, layers): for benches
POOLING = {"none": 0, "mean": 1, "cls": 2, "last": 3}
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_TEXT = (
    'i believe the meaning of life is write a joke about ai from very long prompt which will'
    ' not be truncated this test another hello world string base64 embedding output and or to'
    ' in it that was for on are with as his they at one have this had by word but what some we'
    ' can out other were all there when up use your how said an each she do their time if way'
    ' many then them these so would make like him into has look two more go see number no'
    ' could people my than first water been call who its now find day did get come made may'
    ' part over new sound take only little work know place year live me back give most after'
    ' thing our just name good sentence man think say great where help through much before'
    ' line right too mean old any same tell boy follow came want show also around form three'
    ' small set put end does'
)
WORDS = _TEXT.split()


def vocabulary() -> tuple[list[str], list[int]]:
    """Tokens and token types (3: control, 1: normal) in llama.cpp's WordPiece form."""
    letters = list(string.ascii_lowercase + string.digits + string.punctuation)
    words = list(dict.fromkeys(WORDS + letters))
    tokens = SPECIALS + ["\u2581" + w for w in words] + [c for c in letters]
    return tokens, [3] * len(SPECIALS) + [1] * (len(tokens) - len(SPECIALS))


def _tensors(rng: np.random.Generator, n_vocab: int, shape: tuple[int, int, int, int]) -> dict[str, np.ndarray]:
    n_embd, _, n_ff, n_layer = shape
    def normal(shape: tuple[int, ...], sigma: float = 0.1) -> np.ndarray:
        return (rng.standard_normal(shape) * sigma).astype(np.float32)

    out = {
        "token_embd.weight": normal((n_vocab, n_embd), 1.0),
        "token_types.weight": normal((2, n_embd)),
        "position_embd.weight": normal((N_CTX, n_embd)),
        "token_embd_norm.weight": np.ones(n_embd, np.float32),
        "token_embd_norm.bias": np.zeros(n_embd, np.float32),
    }
    for layer in range(n_layer):
        p = f"blk.{layer}."
        for part in ("attn_q", "attn_k", "attn_v", "attn_output"):
            out |= {p + part + ".weight": normal((n_embd, n_embd)), p + part + ".bias": normal((n_embd,))}
        out |= {
            p + "attn_output_norm.weight": np.ones(n_embd, np.float32),
            p + "attn_output_norm.bias": np.zeros(n_embd, np.float32),
            p + "ffn_up.weight": normal((n_ff, n_embd)), p + "ffn_up.bias": normal((n_ff,)),
            p + "ffn_down.weight": normal((n_embd, n_ff)), p + "ffn_down.bias": normal((n_embd,)),
            p + "layer_output_norm.weight": np.ones(n_embd, np.float32),
            p + "layer_output_norm.bias": np.zeros(n_embd, np.float32),
        }
    return out


def _write(path: Path, seed: int, pooling: str, shape: tuple[int, int, int, int]) -> None:
    import gguf

    tokens, types = vocabulary()
    w = gguf.GGUFWriter(str(path), arch="bert")
    a = "bert."
    w.add_string("general.name", f"tiny-bert-{pooling}-test")
    w.add_uint32(a + "context_length", N_CTX)
    n_embd, n_head, n_ff, n_layer = shape
    w.add_uint32(a + "embedding_length", n_embd)
    w.add_uint32(a + "block_count", n_layer)
    w.add_uint32(a + "feed_forward_length", n_ff)
    w.add_uint32(a + "attention.head_count", n_head)
    w.add_float32(a + "attention.layer_norm_epsilon", 1e-12)
    w.add_bool(a + "attention.causal", False)
    w.add_uint32(a + "pooling_type", POOLING[pooling])
    w.add_tokenizer_model("bert")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_type_count(2)
    w.add_bos_token_id(SPECIALS.index("[CLS]"))
    w.add_sep_token_id(SPECIALS.index("[SEP]"))
    w.add_unk_token_id(SPECIALS.index("[UNK]"))
    w.add_pad_token_id(SPECIALS.index("[PAD]"))
    w.add_mask_token_id(SPECIALS.index("[MASK]"))
    w.add_add_bos_token(True)
    w.add_add_sep_token(True)
    for name, array in _tensors(np.random.default_rng(seed), len(tokens), shape).items():
        w.add_tensor(name, array)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def build(pooling: str = "mean", seed: int = 7, shape: tuple[int, int, int, int] = (N_EMBD, N_HEAD, N_FF, N_LAYER)) -> Path:
    """The path of a tiny BERT embedding GGUF pooled by `pooling` (built once, then cached);
    `shape` is (n_embd, heads, n_ff, layers): `MINILM` gives a model of a real one's cost."""
    key = hashlib.sha256(f"{BUILDER_VERSION}:{seed}:{pooling}:{shape}".encode()).hexdigest()[:16]
    path = cache_dir() / f"tiny-bert-{pooling}-{key}.gguf"
    return build_once(path, lambda partial: _write(partial, seed, pooling, shape))
