"""One generation on one KV sequence: its sampler chain, mask, stop rules and outgoing tokens.

Guarantees: every generation has its own llama.cpp sampler chain (JSON mode's mask at its
head, working on the candidate array itself; then the penalties; then greedy, or top-k,
typical, top-p, min-p, temperature and a seeded draw — the chain llama-cpp-python builds), so
sequences decoded together never share a sampler's state; `emit` applies the stop rules in
the order a single generation always did (mask, stop ids, cancel, budget, context) and says
whether the generation goes on; tokens go out as the first at once and then in batches at
most `BATCH_MS` apart (one pipe write per batch), the rest when it ends; a token's
log-probabilities come from the logits row it was sampled from.
"""

from __future__ import annotations

import ctypes
import importlib
import time
from dataclasses import dataclass, field
from typing import Any

from app.domain.events import FinishReason, GenerationDone, Timings, TokenStep
from app.domain.sampling import Sampling
from app.engine.protocol import Finished, FromWorker, GenerateRequest, PromptProgress, TokenBatch
from app.engine.worker.plan import Active
from app.engine.worker.sequences import Sequence
from app.engine.worker.speculate import Acceptance, Lookup

BATCH_MS = 40.0  # tokens wait at most this long to share a pipe write (the window paints at 40)
DEFAULT_SEED = 0xFFFFFFFF  # llama.cpp's "a random seed"


def sampler_chain(n_vocab: int, last_n: int, s: Sampling, mask: Any = None) -> Any:
    """llama-cpp-python's sampler chain for `s` (as `Llama._init_sampler` builds it without
    mirostat or a GBNF grammar), with `mask` at its head working on the candidate array itself."""
    internals: Any = importlib.import_module("llama_cpp._internals")
    sampler = internals.LlamaSampler()
    if mask is not None:
        sampler.add_custom(mask.on_candidates)
    sampler.add_penalties(
        n_vocab=n_vocab,
        penalty_last_n=last_n,
        penalty_repeat=s.repeat_penalty,
        penalty_freq=0.0,
        penalty_present=0.0,
    )
    seed = DEFAULT_SEED if s.seed is None else s.seed & 0xFFFFFFFF
    if s.temperature < 0.0:
        sampler.add_dist(seed)
    elif s.temperature == 0.0:
        sampler.add_greedy()
    else:
        sampler.add_top_k(s.top_k)
        sampler.add_typical(1.0, 1)
        sampler.add_top_p(s.top_p, 1)
        sampler.add_min_p(s.min_p, 1)
        sampler.add_temp(s.temperature)
        sampler.add_dist(seed)
    return sampler


@dataclass
class Running:
    """A generation under way on `seq`."""

    req: GenerateRequest
    seq: Sequence
    prompt: list[int]
    todo: list[int]  # prompt tokens still to evaluate
    sampler: Any
    mask: Any
    start: float
    reused: int = 0
    restored: int = 0
    restored_from: str = ""
    next: int | None = None  # sampled, not yet in the cache (fed at the next step)
    generated: int = 0
    first_ms: float = 0.0
    reason: FinishReason | None = None
    stop_id: int | None = None
    out: list[TokenStep] = field(default_factory=list)
    sent: float = 0.0
    lookup: Lookup | None = None
    acceptance: Acceptance = field(default_factory=Acceptance)
    drafted: int = 0
    accepted: int = 0
    steps: int = 0
    images: dict[int, Any] = field(default_factory=dict)  # prompt position → image piece
    image_tokens: tuple[int, ...] = ()  # what each image of the prompt became

    def read(self, send: Any, image: int = 0) -> None:
        """Send how far the prompt is read: of the tokens this generation evaluates (those its
        cache did not hold when it started), how many are; with `image` (from 1), that the
        reading reached that image of the prompt's and the projector encodes it now."""
        total = len(self.prompt) - self.reused - self.restored
        done, at = max(0, total - len(self.todo)), (image, len(self.image_tokens))
        send(PromptProgress(self.req.request, done, total, at if image else None))

    def view(self, cancelled: bool) -> Active:
        """This generation as a plan sees it (`cancelled`: its request was)."""
        seq, request, held = self.seq.id, self.req.request, len(self.seq.tokens)
        return Active(seq, request, self.prompt, held, self.todo, self.next, cancelled)

    def emit(self, token: int, top: Any, full: bool, cancelled: bool) -> bool:
        """Take the sampled `token` (`top`: its log-probabilities, or None; `full`: the
        sequence's context has no room for it); whether the generation goes on (else `reason`
        says why it ended)."""
        now = (time.perf_counter() - self.start) * 1000
        if self.generated == 0:
            self.first_ms = now
        self.generated += 1
        self.out.append(TokenStep(token, now) if top is None else TokenStep(token, now, *top))
        if self.lookup is not None:
            self.lookup.extend((token,))
            self.acceptance.score(self.lookup.tokens)
        stops = self.req.stop_ids
        if self.mask is not None and (not self.mask.consume(token) or self.mask.finished):
            self.reason, self.stop_id = FinishReason.STOP, token if token in stops else None
        elif token in stops:
            self.reason, self.stop_id = FinishReason.STOP, token
        elif cancelled:
            self.reason = FinishReason.CANCELLED
        elif self.generated >= self.req.max_tokens:
            self.reason = FinishReason.LENGTH
        elif full:
            self.reason = FinishReason.CONTEXT
        else:
            self.next = token
            return True
        self.next = None
        return False

    def flush(self, send: Any, force: bool = False) -> None:
        """Send the tokens waiting, if the first or `BATCH_MS` after the last send (or
        `force`)."""
        if not self.out:
            return
        now = (time.perf_counter() - self.start) * 1000
        if force or self.generated == len(self.out) or now - self.sent >= BATCH_MS:
            send(TokenBatch(self.req.request, tuple(self.out)))
            self.out, self.sent = [], now

    def finished(self) -> FromWorker:
        """The `Finished` reply, with the generation's timings."""
        timings = Timings(
            prompt_tokens=len(self.prompt),
            prompt_reused=self.reused,
            prompt_evaluated=len(self.prompt) - self.reused - self.restored,
            first_token_ms=self.first_ms,
            total_ms=(time.perf_counter() - self.start) * 1000,
            generated=self.generated,
            prompt_restored=self.restored,
            restored_from=self.restored_from,
            drafted=self.drafted,
            accepted=self.accepted,
            image_tokens=self.image_tokens,
        )
        reason = self.reason or FinishReason.CANCELLED
        return Finished(self.req.request, GenerationDone(reason, self.stop_id, timings))


def scored(low: Any, ctx: Any, idx: int, n_vocab: int, token: int, top: int) -> Any:
    """(log-probability, the `top` likeliest) of `token` from logits row `idx`; None for 0."""
    if top <= 0:
        return None
    import numpy as np

    row = low.llama_get_logits_ith(ctx, idx)
    pointer = ctypes.cast(row, ctypes.POINTER(ctypes.c_float))
    logits = np.ctypeslib.as_array(pointer, shape=(n_vocab,)).astype(np.float64)
    peak = float(logits.max())
    logprobs = logits - (peak + float(np.log(np.exp(logits - peak).sum())))
    best = np.argpartition(-logprobs, top)[:top]
    best = best[np.argsort(-logprobs[best])]
    return float(logprobs[token]), tuple((int(i), float(logprobs[i])) for i in best)
