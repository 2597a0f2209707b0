"""Token masks in the worker: an llguidance matcher turned into a llama-cpp-python processor.

Guarantees: the mask is applied in one vectorised numpy step (no Python loop over the
vocabulary); the tokenizer the matcher needs is built once per model and set of stop ids.
Only the worker imports this module (it needs llama.cpp and llguidance).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class TokenMask:
    """One constrained generation: the matcher, its bitmask, and the processor that applies it."""

    def __init__(self, tokenizer: Any, grammar: str, n_vocab: int) -> None:
        import llguidance
        import llguidance.numpy as lnp

        self.matcher = llguidance.LLMatcher(tokenizer, grammar, log_level=1)
        if self.matcher.is_error():
            raise ValueError(self.matcher.get_error())
        self._lnp = lnp
        self._mask = lnp.allocate_token_bitmask(1, tokenizer.vocab_size)
        self._n_vocab = n_vocab

    def __call__(self, _input_ids: Any, scores: np.ndarray) -> np.ndarray:
        self._lnp.fill_next_token_bitmask(self.matcher, self._mask, 0)
        allowed = np.unpackbits(self._mask.view(np.uint8), bitorder="little")[: len(scores)]
        scores[allowed == 0] = -np.inf
        return scores

    def consume(self, token: int) -> bool:
        """Advance past a sampled token; False if the grammar did not allow it."""
        return bool(self.matcher.consume_token(token))

    @property
    def finished(self) -> bool:
        return bool(self.matcher.is_stopped())


class MaskFactory:
    """Builds `TokenMask`s for one loaded model, caching the llguidance tokenizer."""

    def __init__(self, llm: Any) -> None:
        self._llm = llm
        self._tokenizers: dict[tuple[int, ...], Any] = {}

    def mask(self, grammar: str, stop_ids: Sequence[int]) -> TokenMask:
        from llguidance.llamacpp import lltokenizer_from_vocab

        key = tuple(sorted(stop_ids))
        if key not in self._tokenizers:
            vocab = self._llm._model.vocab
            eos = list(key) or [int(self._llm.token_eos())]
            self._tokenizers[key] = lltokenizer_from_vocab(
                vocab, n_vocab=self._llm.n_vocab(), eos_token=eos
            )
        return TokenMask(self._tokenizers[key], grammar, self._llm.n_vocab())
