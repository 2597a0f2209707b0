"""Token masks in the worker: an llguidance matcher as the first sampler of llama.cpp's chain.

Guarantees: the mask works on llama.cpp's candidate array itself, at the head of the sampler
chain (`masked_sampler`): with few tokens allowed the array is cut to them, so the samplers
after it see only those; else the disallowed get -inf in place — vectorised numpy, never a
loop over the vocabulary in Python; the tokenizer the matcher needs is built once per model
and set of stop ids; a retry's banned tokens are taken out of the next mask only; near the
end of the budget only the answer's shortest ending is allowed (`close_within`).
Only the worker imports this module (it needs llama.cpp and llguidance).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np

# llama.cpp's `llama_token_data`: what its candidate array holds per token
TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


def _ids(words: np.ndarray, picked: np.ndarray) -> np.ndarray:
    """The token ids of the set bits of the words at `picked`."""
    bits = np.flatnonzero(np.unpackbits(words[picked].view(np.uint8), bitorder="little"))
    ids: np.ndarray = picked[bits >> 5] * 32 + (bits & 31)
    return ids


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
        self._banned: tuple[int, ...] = ()
        self._closer: Any = None  # ends the answer in time (`app/engine/closing.py`)
        self._left = 0  # tokens the generation may still make
        self._tokens: list[int] = []  # every token consumed, a continued prefix included
        self._forced: list[int] = []  # the ending, once it had to start

    def close_within(self, max_tokens: int, closer: Any) -> None:
        """From now on, end the answer within `max_tokens` tokens: once the tokens left come
        near what the shortest ending takes (plus the closer's margin), only that ending is
        allowed — if the grammar accepts all of it."""
        self._closer, self._left = closer, max_tokens

    def ban_next(self, tokens: Sequence[int]) -> None:
        """Forbid `tokens` at the next step only (JSON mode's retry excludes the earlier
        choice), unless nothing else would be allowed there."""
        self._banned = tuple(tokens)

    def on_candidates(self, array_p: Any) -> None:
        """The mask on llama.cpp's candidate array itself (a sampler at the head of the chain):
        the forced ending's next id, or the matcher's mask, applied by `restrict`."""
        forced = self._ending_next()
        if forced is None:
            self.fill()
        self.restrict(array_p, forced)

    def restrict(self, array_p: Any, forced: int | None = None) -> None:
        """Apply the filled mask (or only `forced`) to the candidate array: when few tokens are
        allowed they are moved to the front and the array is cut to them, so every sampler
        after this one sees those few instead of the whole vocabulary; else the disallowed get
        -inf in place."""
        array = array_p.contents
        n = int(array.size)
        raw = (ctypes.c_char * (n * TOKEN_DATA.itemsize)).from_address(
            ctypes.addressof(array.data.contents)
        )
        candidates = np.frombuffer(memoryview(raw), dtype=TOKEN_DATA, count=n)
        if forced is not None:
            ids = np.array([forced], dtype=np.int64)
        else:
            words = self._mask[0]
            some = np.flatnonzero(words)
            if len(some) * 8 >= len(words) or n != self._n_vocab:
                self.apply(candidates["logit"])
                return
            ids = _ids(words, some)
            ids = ids[ids < n]
            if not len(ids):  # nothing allowed (the matcher failed): the consume says so after
                return
        candidates[: len(ids)] = candidates[ids]  # in id order: position i holds token i
        array.size = len(ids)
        array.sorted = False

    def _ending_next(self) -> int | None:
        """The next id of the forced ending, once it had to start."""
        if self._forced:
            return self._forced[0]
        closer = self._closer
        if closer is None or self._left > closer.window:
            return None
        endings = closer.endings(self._tokens)
        if not endings or len(endings[0]) + closer.margin < self._left:
            return None
        for ending in endings:  # the first the grammar accepts whole (checked, not consumed)
            if self._accepts(ending):
                self._forced = list(ending)
                return self._forced[0]
        return None  # no proposal fits the grammar: generation goes on freely

    def fill(self) -> None:
        """The matcher's mask for the next token (the banned ones taken out)."""
        self._lnp.fill_next_token_bitmask(self.matcher, self._mask, 0)
        if self._banned:
            words = self._mask[0].view(np.uint32)
            kept = words.copy()
            for token in self._banned:
                words[token >> 5] &= np.uint32(~(1 << (token & 31)) & 0xFFFFFFFF)
            if not words.any():  # the earlier choice was the only one: it stays allowed
                words[:] = kept
            self._banned = ()

    def apply(self, scores: np.ndarray) -> None:
        """Disallowed tokens to -inf, the cheapest way for the mask at hand (never a loop over
        the vocabulary in Python): few allowed (JSON's structure) — keep those by index; few
        disallowed (inside a string) — clear those; many of each — add log(allowed), 0 or
        -inf, in one branch-free pass (a boolean scatter over half the vocabulary is slow)."""
        words, n = self._mask[0], len(scores)
        some = np.flatnonzero(words)
        if len(some) * 8 < len(words):
            ids = _ids(words, some)
            ids = ids[ids < n]
            kept = scores[ids]
            scores.fill(-np.inf)
            scores[ids] = kept
            return
        allowed = np.unpackbits(words.view(np.uint8), bitorder="little", count=n)
        if (n - np.count_nonzero(allowed)) * 8 < n:
            scores[allowed == 0] = -np.inf
            return
        with np.errstate(divide="ignore"):
            scores += np.log(allowed, dtype=np.float32)

    def _accepts(self, ending: list[int]) -> bool:
        """Whether the grammar takes every id of `ending` from here (nothing is consumed, and
        nothing logged): a stop id the grammar names as its end counts once the rest ends it."""
        valid = self.matcher.validate_tokens(ending)
        if valid == len(ending):
            return True
        if valid != len(ending) - 1:
            return False
        trial = self.matcher.deep_copy()
        if trial.try_consume_tokens(ending[:-1]) != valid:
            return False
        last = ending[-1]
        allowed = trial.compute_bitmask()  # one bit per token: is the stop id allowed here?
        return bool(allowed[last // 8] >> (last % 8) & 1)

    def consume(self, token: int) -> bool:
        """Advance past a sampled token; False if the grammar did not allow it."""
        self._tokens.append(token)
        self._left -= 1
        if self._forced:
            self._forced = self._forced[1:] if self._forced[0] == token else []
        return bool(self.matcher.consume_token(token))

    @property
    def finished(self) -> bool:
        return bool(self.matcher.is_stopped())


def masked_sampler(llm: Any, mask: TokenMask, **options: Any) -> Any:
    """llama-cpp-python's sampler chain for `options` (as `Llama._init_sampler` builds it
    without mirostat or a GBNF grammar), with `mask` at its head working on the candidate array
    itself — instead of a logits processor, which sees a strided copy of every logit."""
    import importlib

    internals: Any = importlib.import_module("llama_cpp._internals")
    sampler = internals.LlamaSampler()
    sampler.add_custom(mask.on_candidates)
    sampler.add_penalties(
        n_vocab=llm._n_vocab,
        penalty_last_n=llm.last_n_tokens_size,
        penalty_repeat=options.get("repeat_penalty", 1.0),
        penalty_freq=options.get("frequency_penalty", 0.0),
        penalty_present=options.get("presence_penalty", 0.0),
    )
    temp = options.get("temp", 0.8)
    if temp < 0.0:
        sampler.add_dist(llm._seed)
    elif temp == 0.0:
        sampler.add_greedy()
    else:
        sampler.add_top_k(options.get("top_k", 40))
        sampler.add_typical(options.get("typical_p", 1.0), 1)
        sampler.add_top_p(options.get("top_p", 0.95), 1)
        sampler.add_min_p(options.get("min_p", 0.05), 1)
        sampler.add_temp(temp)
        sampler.add_dist(llm._seed)
    return sampler


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
