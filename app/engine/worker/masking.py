"""Token masks in the worker: an llguidance matcher as the first sampler of llama.cpp's chain.

Guarantees: the mask works on llama.cpp's candidate array itself, at the head of the sampler
chain (`running.sampler_chain`), as `mask_plans` applies it (the array cut to the few allowed, or
the few disallowed set to -inf); with a spare core the next mask is worked out while the model
decodes (the matcher is touched by one thread at a time: each use waits for that work), so the
sampler only applies it; the tokenizer the matcher needs is built once per model and set of
stop ids; a retry's banned tokens are taken out of the next mask only; near the end of the
budget only the answer's shortest ending is allowed (`close_within`).
Only the worker imports this module (it needs llama.cpp and llguidance).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from app.constrain.closing import Closer
from app.engine.protocol import GenerateRequest
from app.engine.worker.ahead import Ahead, Pending, ahead
from app.engine.worker.mask_plans import Plan, Plans, apply, only


class TokenMask:
    """One constrained generation: the matcher, its bitmask, and the sampler that applies it."""

    def __init__(
        self, tokenizer: Any, grammar: str, n_vocab: int, ahead: Ahead | None = None
    ) -> None:
        import llguidance
        import llguidance.numpy as lnp

        self.matcher = llguidance.LLMatcher(tokenizer, grammar, log_level=1)
        if self.matcher.is_error():
            raise ValueError(self.matcher.get_error())
        self._lnp = lnp
        self._mask = lnp.allocate_token_bitmask(1, tokenizer.vocab_size)
        self._n_vocab = n_vocab
        self._banned: tuple[int, ...] = ()
        self._plans = Plans(n_vocab)
        self._ahead = ahead  # works out the next mask while the model decodes (a spare core)
        self._pending: Pending[Plan] | None = None
        self._stopped = False
        self._closer: Any = None  # ends the answer in time (`app/constrain/closing.py`)
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
        self.discard()  # a mask worked out ahead knew nothing of the ban
        self._banned = tuple(tokens)

    def on_candidates(self, array_p: Any) -> None:
        """The mask on llama.cpp's candidate array itself (a sampler at the head of the chain):
        the forced ending's next id, or the matcher's mask (worked out ahead when it could
        be), applied by `mask_plans.apply`."""
        plan = self.settle()
        forced = self._ending_next()
        if forced is not None:
            plan = only(forced)
        elif plan is None:
            plan = self._next_plan()
        apply(array_p, self._n_vocab, plan)

    def restrict(self, array_p: Any, forced: int | None = None) -> None:
        """Apply the filled mask (or only `forced`) to the candidate array."""
        plan = only(forced) if forced is not None else self._plans.of(self._mask[0])
        apply(array_p, self._n_vocab, plan)

    def settle(self) -> Plan | None:
        """Wait for the mask being worked out ahead, if one is: its plan."""
        pending, self._pending = self._pending, None
        return None if pending is None else pending.result()

    def discard(self) -> None:
        """Wait for work under way and drop it, its result or its error unused (the
        generation ended, or the next mask is to be worked out afresh)."""
        if self._pending is not None:  # (at every consume: nothing to do, mostly)
            with contextlib.suppress(Exception):
                self.settle()

    def _next_plan(self) -> Plan:
        self.fill()
        return self._plans.of(self._mask[0])

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

    def consume(self, token: int, ahead: bool = True) -> bool:
        """Advance past a sampled token; False if the grammar did not allow it. With `ahead`
        (a generated token, not a continued prefix's) and a spare core, the next mask is
        worked out at once, beside the decode of the next token."""
        self.discard()  # (a continued prefix: nothing sampled in between)
        self._tokens.append(token)
        self._left -= 1
        if self._forced:
            self._forced = self._forced[1:] if self._forced[0] == token else []
        ok = bool(self.matcher.consume_token(token))
        self._stopped = bool(self.matcher.is_stopped())
        if ok and ahead and not self._stopped and not self._forced and self._ahead is not None:
            self._pending = self._ahead.submit(self._next_plan)
        return ok

    @property
    def finished(self) -> bool:
        return self._stopped


class MaskFactory:
    """Builds `TokenMask`s for one loaded model, caching the llguidance tokenizer; with
    `use_ahead`, its masks work out each next mask on the process's helper thread (`ahead`)."""

    def __init__(self, llm: Any, use_ahead: bool = False) -> None:
        self._llm = llm
        self._tokenizers: dict[tuple[int, ...], Any] = {}
        self._ahead = ahead() if use_ahead else None

    def mask(self, grammar: str, stop_ids: Sequence[int]) -> TokenMask:
        from llguidance.llamacpp import lltokenizer_from_vocab

        key = tuple(sorted(stop_ids))
        if key not in self._tokenizers:
            vocab = self._llm._model.vocab
            eos = list(key) or [int(self._llm.token_eos())]
            self._tokenizers[key] = lltokenizer_from_vocab(
                vocab, n_vocab=self._llm.n_vocab(), eos_token=eos
            )
        return TokenMask(self._tokenizers[key], grammar, self._llm.n_vocab(), self._ahead)

    def for_request(
        self,
        req: GenerateRequest,
        piece: Callable[[int], bytes],
        cancelled: Callable[[], bool] | None = None,
    ) -> tuple[TokenMask | None, str]:
        """The mask for a generation: none for an unconstrained one; else a continued answer's
        ids read, the retry's ban set, the budget's closer in place (`piece` spells an id,
        control tokens included; `cancelled` stops the closer's work) — or why it cannot be
        had."""
        if req.grammar is None:
            return None, ""
        try:
            mask = self.mask(req.grammar, req.stop_ids)
        except ValueError as exc:
            return None, f"the JSON constraint could not be set up: {exc}"
        if not all(mask.consume(token, ahead=False) for token in req.consumed):
            return None, "the cut answer does not follow its JSON schema; regenerate it"
        mask.ban_next(req.banned)
        if req.closing:
            mask.close_within(req.max_tokens, self._closer(req, piece, cancelled))
        return mask, ""

    def _closer(
        self,
        req: GenerateRequest,
        piece: Callable[[int], bytes],
        cancelled: Callable[[], bool] | None,
    ) -> Closer:
        llm = self._llm

        def tokenize(text: str) -> list[int]:
            return [int(t) for t in llm.tokenize(text.encode(), add_bos=False, special=False)]

        eos = req.stop_ids[0] if req.stop_ids else int(llm.token_eos())
        return Closer(req.closing, tokenize, piece, eos, cancelled)
