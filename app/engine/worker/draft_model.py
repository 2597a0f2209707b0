"""A draft model for speculative decoding: a smaller GGUF with the main model's vocabulary.

Guarantees: a draft model whose vocabulary is not the main model's (another size, or any id
spelled differently, or other control tokens) is refused with a sentence that says which
(the load fails at its "draft" stage); it holds one KV sequence per main sequence, kept in
step lazily (only what differs from what it last read is evaluated); its drafts are its
greedy choices, and it measures what a drafted token costs it (`ms_per_token`), which the
policy weighs (`speculate.py`). It never decides a token: the main model's sampler does.
"""

from __future__ import annotations

import ctypes
import time
from typing import Any

import numpy as np

from app.engine.worker.kv_candidates import common_prefix

CHUNK = 256


def same_vocabulary(main: Any, draft: Any, piece: Any) -> str:
    """Why `draft` cannot draft for `main` ("" when it can); `piece(model, id)` spells an id."""
    if main.n_vocab() != draft.n_vocab():
        return f"its vocabulary has {draft.n_vocab()} tokens; the model's has {main.n_vocab()}"
    if (main.token_bos(), main.token_eos()) != (draft.token_bos(), draft.token_eos()):
        return "its start and end tokens are not the model's"
    for token in range(main.n_vocab()):
        if piece(main, token) != piece(draft, token):
            return f"token {token} is spelled differently in the two vocabularies"
    return ""


class DraftModel:
    """The loaded draft model and its sequences."""

    def __init__(self, llm: Any, low: Any, batch_size: int = CHUNK) -> None:
        self.llm, self.low = llm, low
        self._held: dict[int, list[int]] = {}  # sequence → tokens its KV holds
        self._batch = low.llama_batch_init(batch_size, 0, 1)
        self._size = batch_size
        self.ms_per_token = 0.0

    def close(self) -> None:
        self.low.llama_batch_free(self._batch)

    def propose(self, seq: int, tokens: list[int], limit: int) -> list[int]:
        """Up to `limit` greedy tokens after `tokens` (the sequence's whole history)."""
        if limit <= 0 or not tokens:
            return []
        start = time.perf_counter()
        held = self._held.get(seq, [])
        if len(held) < len(tokens) and held == tokens[: len(held)]:
            n = len(held)  # (the usual step: what it read is still the start; no walk)
        else:
            n = min(common_prefix(held, tokens), len(tokens) - 1)
        memory = self.low.llama_get_memory(self.llm._ctx.ctx)
        if not self.low.llama_memory_seq_rm(memory, seq, n, -1):
            self.low.llama_memory_seq_rm(memory, seq, -1, -1)
            n = 0
        held = tokens[:n]
        drafted: list[int] = []
        feed = tokens[n:]
        while True:
            if not self._decode(seq, len(held), feed):
                self.low.llama_memory_seq_rm(memory, seq, -1, -1)
                self._held[seq] = []
                return []
            held = held + feed
            if len(drafted) == limit:
                break
            token = self._greedy()
            drafted.append(token)
            if len(drafted) == limit:
                break
            feed = [token]
        self._held[seq] = held
        ms = (time.perf_counter() - start) * 1000 / max(1, len(drafted))
        self.ms_per_token = ms if not self.ms_per_token else self.ms_per_token * 0.8 + ms * 0.2
        return drafted

    def forget(self, seq: int) -> None:
        self._held.pop(seq, None)

    def _decode(self, seq: int, pos: int, tokens: list[int]) -> bool:
        for start in range(0, len(tokens), self._size):
            chunk = tokens[start : start + self._size]
            batch = self._batch
            for i, token in enumerate(chunk):
                batch.token[i], batch.pos[i] = token, pos + start + i
                batch.n_seq_id[i], batch.seq_id[i][0] = 1, seq
                batch.logits[i] = start + i == len(tokens) - 1
            batch.n_tokens = len(chunk)
            if self.low.llama_decode(self.llm._ctx.ctx, batch) != 0:
                return False
        return True

    def _greedy(self) -> int:
        n_vocab = self.llm.n_vocab()
        row = self.low.llama_get_logits_ith(self.llm._ctx.ctx, -1)
        logits = np.ctypeslib.as_array(ctypes.cast(row, ctypes.POINTER(ctypes.c_float)), (n_vocab,))
        return int(logits.argmax())
