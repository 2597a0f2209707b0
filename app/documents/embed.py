"""Embeddings made on this machine, with nothing downloaded: WordLlama's bundled model.

Guarantees: the model is the one inside the `wordllama` wheel (MIT; token embeddings taken
from a large language model's, 256 dimensions, 16 MB) read from the installed package — the
package's own loader would fetch its tokenizer from the network, so it is not used; vectors
are float32 and unit length (a dot product is the cosine); `NAME` changes when the model
does, so stored vectors are made again rather than mixed.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

NAME = "wordllama-l2-supercat-256"
DIM = 256


@functools.cache
def _model() -> Any:
    import wordllama
    from safetensors import safe_open
    from tokenizers import Tokenizer
    from wordllama.inference import WordLlamaInference

    root = Path(wordllama.__file__).parent
    tokenizer = Tokenizer.from_file(str(root / "tokenizers" / "l2_supercat_tokenizer_config.json"))
    with safe_open(str(root / "weights" / "l2_supercat_256.safetensors"), "np") as f:
        table = f.get_tensor("embedding.weight")
    return WordLlamaInference(table, tokenizer, binary=False)


def embed(texts: Sequence[str]) -> np.ndarray:
    """One unit vector per text (a text with no known word gets zeros)."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    vectors = np.asarray(_model().embed(list(texts)), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return unit


def token_counts(texts: Sequence[str]) -> list[int]:
    """How many of WordLlama's tokens each text has (padding not counted)."""
    return [sum(e.attention_mask) for e in _model().tokenize(list(texts))] if texts else []


__all__ = ["DIM", "NAME", "embed", "token_counts"]
