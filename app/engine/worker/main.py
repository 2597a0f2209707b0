"""The model worker: the only process that imports llama.cpp.

Runs `serve(conn)` in its own OS process: loads one GGUF model, generates from prompt ids, and
answers quick questions (tokenize, token bytes, logits), one request at a time, each reply
tagged with its request's id. Guarantees: every request gets an answer on the pipe; a
generation checks for a `Cancel` of its request between tokens (and between graph nodes while
the prompt is evaluated, and within JSON mode's closer while it works out an ending) and ends
with `GenerationDone(CANCELLED)` when one came — the client cancels a generation past its
deadline this way (`app/engine/local/client.py`), so none holds the worker; a prompt that
does not fit, or a grammar the vocabulary cannot follow, is `Refused` with its code and the
worker stays ready; a load failure says at which stage it failed (vocabulary: architecture,
hyper-parameters, tokenizer; weights: tensors) so the client can type the error without
reading llama.cpp's text. If llama.cpp aborts the process, the client sees the pipe close and
reports it. A model's stored chat templates are never compiled (`load_guard.py`). Imports
only the protocol, the core count and JSON mode (`app.constrain`).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import time
from functools import partial
from multiprocessing.connection import Connection
from typing import Any

from app.domain.events import FinishReason, GenerationDone, Timings, TokenStep
from app.engine.cores import spare_core
from app.engine.protocol import (
    Answer,
    Evaluated,
    Finished,
    GenerateRequest,
    Keep,
    Loaded,
    LoadFailed,
    LoadProgress,
    LoadRequest,
    Logits,
    ModelInfo,
    Query,
    Refused,
    ShutdownRequest,
    SpecialBytes,
    SpecialIds,
    Specials,
    TokenBatch,
    Tokenize,
    TokenTable,
)
from app.engine.worker.inbox import Inbox
from app.engine.worker.kv_snapshots import Restored, Snapshots, common_prefix, snapshots_for
from app.engine.worker.load_guard import neutralise_chat_templates
from app.engine.worker.masking import MaskFactory, masked_sampler
from app.engine.worker.native_log import Gathered, log, native_log
from app.engine.worker.placement import as_loaded, llama_arguments, placement_for
from app.errors import ErrorCode

BATCH_MS = 40.0  # tokens wait at most this long to share a pipe write (the window paints at 40)
_PIECE_BUFFER = 256  # bytes; llama-cpp-python's own 32-byte buffer truncates long tokens


class _Worker:
    def __init__(self, conn: Connection) -> None:
        import llama_cpp
        import llama_cpp.llama_cpp as low_level

        self.lc = llama_cpp
        self.low = low_level  # the module `Llama` reads its default model params from
        self.gathered = Gathered()
        log.addHandler(self.gathered)
        log.setLevel(logging.INFO)
        self.inbox = Inbox(conn, self.gathered.take)
        self._send = self.inbox.send
        self.llm: Any = None
        self._mask_factory: Any = None
        self._mask_factory_llm: Any = None
        self._buf = ctypes.create_string_buffer(_PIECE_BUFFER)
        self.window = 0  # the loaded model's sliding window (0: none)
        self.snapshots: Snapshots | None = None
        self._no_abort = low_level.ggml_abort_callback()  # NULL: no check between nodes
        self._log_callback = low_level.llama_log_callback(native_log)
        low_level.llama_log_set(self._log_callback, ctypes.c_void_p(0))

    # --- loading --------------------------------------------------------------------

    def _progress_params(self, req: LoadRequest) -> Any:
        """Default model params that report load progress and stop on cancel."""
        original = self.low.llama_model_default_params
        extra_buffers = req.extra_buffers

        def report(fraction: float, _data: Any) -> bool:
            self._send(LoadProgress(req.request, float(fraction)))
            return not self.inbox.cancelled(req.request)

        callback = self.low.llama_progress_callback(report)

        def params() -> Any:
            p = original()
            p.progress_callback = callback
            # llama.cpp's CPU "extra buffer" (weight repacking, AMX) path crashed with SIGSEGV on
            # Q4_K weights on these machines (AVX-512/AMX CPUs); plain buffers are safe everywhere.
            p.use_extra_bufts = extra_buffers
            return p

        return params, callback

    def load(self, req: LoadRequest) -> None:
        start = time.perf_counter()
        self.llm = None
        self._drop_snapshots()
        neutralise_chat_templates(self.lc)  # a stored chat template never runs here
        try:
            vocab = self.lc.Llama(model_path=req.path, vocab_only=True, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            self._send(LoadFailed(req.request, "vocabulary", str(exc)))
            return
        placement = placement_for(
            req.settings, vocab.metadata, self.low.llama_supports_gpu_offload()
        )
        del vocab
        params, keep_alive = self._progress_params(req)
        original = self.low.llama_model_default_params
        self.low.llama_model_default_params = params
        try:
            self.llm = self.lc.Llama(
                model_path=req.path,
                n_ctx=req.n_ctx,
                n_batch=req.n_batch,
                n_threads=req.n_threads,
                n_threads_batch=req.n_threads,
                verbose=False,
                **llama_arguments(placement),
            )
        except (ValueError, RuntimeError, OSError) as exc:
            cancelled = self.inbox.cancelled(req.request)
            self._send(LoadFailed(req.request, "weights", str(exc), cancelled=cancelled))
            return
        finally:
            self.low.llama_model_default_params = original
            del keep_alive
        llm = self.llm
        placement = as_loaded(placement, llm.model_params, llm.context_params)
        self.window = placement.sliding_window
        self.snapshots = snapshots_for(llm, self.low, req.snapshots, placement, self._holds)
        info = ModelInfo(
            path=req.path,
            n_vocab=llm.n_vocab(),
            n_ctx=llm.n_ctx(),
            n_ctx_train=llm._model.n_ctx_train(),
            architecture=str(llm.metadata.get("general.architecture", "")),
            n_threads=req.n_threads,
            load_ms=(time.perf_counter() - start) * 1000,
            metadata={k: v for k, v in llm.metadata.items() if len(v) < 65536},
            placement=placement,
        )
        self._send(Loaded(req.request, info))

    def _drop_snapshots(self) -> None:
        if self.snapshots is not None:
            self.snapshots.flush(timeout=4.0)  # what the last answer left reaches the disk
            self.snapshots = None

    # --- generation -----------------------------------------------------------------

    def _prepare(self, prompt: list[int], keep: Keep | None) -> tuple[int, Restored]:
        """Make the cache hold the longest prefix of `prompt` it can without evaluating:
        the live cache's (`_rollback`), or a snapshot's when it holds more; (reused, restored)."""
        reused = self._rollback(prompt)
        if keep is None or self.snapshots is None:
            return reused, Restored(0, "")
        restored = self.snapshots.restore(prompt, reused, keep)
        if restored is None:
            return reused, Restored(0, "")
        return 0, restored

    def _rollback(self, prompt: list[int]) -> int:
        """Keep the longest cached prefix of `prompt` (all but its last token) that llama.cpp's
        memory really holds, and drop the rest; how many tokens were kept. A sliding-window
        cache that no longer holds what the kept prefix attends to is cleared: the prompt is
        evaluated again rather than continued from a state the model never had."""
        llm = self.llm
        n = common_prefix(llm._input_ids[: llm.n_tokens].tolist(), prompt[:-1])
        if n and llm._ctx.kv_cache_seq_rm(-1, n, -1) and self._holds(n):
            llm.n_tokens = n
            return n
        llm.reset()
        llm._ctx.kv_cache_clear()
        return 0

    def _holds(self, n: int) -> bool:
        """Whether the memory holds positions 0..n-1 as far as the model attends to them (a
        sliding-window layer needs only the last `window`): llama.cpp's own positions."""
        memory = self.llm._ctx.memory
        low = self.low.llama_memory_seq_pos_min(memory, 0)
        high = self.low.llama_memory_seq_pos_max(memory, 0)
        needed_from = max(0, n - self.window) if self.window else 0
        return bool(high == n - 1 and 0 <= low <= needed_from)

    def _evaluate(self, tokens: list[int], request: int) -> bool:
        """Evaluate the prompt's new tokens, stoppable between llama.cpp's graph nodes by a
        cancel of `request` (its abort callback, set only here: decoding one token pays
        nothing); False when cancelled, with the memory cut back to what was fully evaluated."""
        llm, cancelled = self.llm, self.inbox.cancelled
        callback = self.low.ggml_abort_callback(lambda _data: cancelled(request))
        self.low.llama_set_abort_callback(llm._ctx.ctx, callback, None)
        try:
            llm.eval(tokens)
        except RuntimeError:
            if not cancelled(request):
                raise
            llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
            return False
        finally:
            self.low.llama_set_abort_callback(llm._ctx.ctx, self._no_abort, None)
        return True

    def generate(self, req: GenerateRequest) -> None:
        llm, prompt, s = self.llm, list(req.prompt_ids), req.sampling
        start = time.perf_counter()
        if len(prompt) >= llm.n_ctx():
            refused = f"the prompt has {len(prompt)} tokens; the context holds {llm.n_ctx()}"
            self._send(Refused(req.request, ErrorCode.CONTEXT, refused))
            return
        mask, refused = self._mask_for(req)
        if refused:
            self._send(Refused(req.request, ErrorCode.GRAMMAR, refused))
            return
        reused, restored = self._prepare(prompt, req.keep)
        if s.seed is not None:
            llm.set_seed(s.seed)
        reason, stop_id, generated, first_ms = FinishReason.CANCELLED, None, 0, 0.0
        if self._evaluate(prompt[reused + restored.count :], req.request):
            if mask is not None:  # the mask heads the sampler chain, on the candidates themselves
                llm._init_sampler = partial(masked_sampler, llm, mask)
            try:
                tokens = llm.generate(
                    prompt,
                    top_k=s.top_k,
                    top_p=s.top_p,
                    min_p=s.min_p,
                    temp=s.temperature,
                    repeat_penalty=s.repeat_penalty,
                    reset=True,
                )
                reason, stop_id, generated, first_ms = self._stream(tokens, req, mask, start)
            finally:
                llm.__dict__.pop("_init_sampler", None)  # the class's own, for the next one
                if mask is not None:
                    mask.discard()  # a next mask worked out ahead, now unused
        timings = Timings(
            prompt_tokens=len(prompt),
            prompt_reused=reused,
            prompt_evaluated=len(prompt) - reused - restored.count,
            first_token_ms=first_ms,
            total_ms=(time.perf_counter() - start) * 1000,
            generated=generated,
            prompt_restored=restored.count,
            restored_from=restored.source,
        )
        self._send(Finished(req.request, GenerationDone(reason, stop_id, timings)))
        self._keep(req.keep)

    def _keep(self, keep: Keep | None) -> None:
        """After the reply went out: keep the cache's state for `keep`'s conversation."""
        if keep is not None and self.snapshots is not None:
            self.snapshots.keep(keep)

    def logits(self, prompt: list[int], keep: Keep | None) -> Evaluated:
        """Evaluate `prompt` as a generation would (the same rollback and snapshots) and give
        how, with the next token's logits (float32 bytes): the exactness check."""
        reused, restored = self._prepare(prompt, keep)
        self.llm.eval(prompt[reused + restored.count :])
        n_vocab = self.llm.n_vocab()
        row = self.low.llama_get_logits_ith(self.llm._ctx.ctx, -1)
        return Evaluated(
            reused, restored.count, restored.source, ctypes.string_at(row, n_vocab * 4)
        )

    def _mask_for(self, req: GenerateRequest) -> tuple[Any, str]:
        """The JSON mode's token mask for `req`, or why not (`MaskFactory.for_request`)."""
        if req.grammar is None:  # (no model's vocabulary read for llguidance)
            return None, ""
        cancelled = partial(self.inbox.cancelled, req.request)  # stops the closer's work
        mask, why = self._masks().for_request(req, lambda t: self.piece(t, True), cancelled)
        return mask, str(why)

    def _stream(
        self, tokens: Any, req: GenerateRequest, mask: Any, start: float
    ) -> tuple[FinishReason, int | None, int, float]:
        """Send the tokens as they come — the first at once, then in batches at most
        `BATCH_MS` apart (one pipe write and one wake-up of the app per batch, not per token),
        the last batch when the generation ends; (why it stopped, the stop id, how many, first
        ms)."""
        llm, stops = self.llm, frozenset(req.stop_ids)
        reason, stop_id, generated, first_ms = FinishReason.LENGTH, None, 0, 0.0
        batch: list[TokenStep] = []
        sent = 0.0
        try:
            for token in tokens:
                now = (time.perf_counter() - start) * 1000
                if generated == 0:
                    first_ms = now
                generated += 1
                batch.append(self._scored(int(token), now, req.top_logprobs))
                if generated == 1 or now - sent >= BATCH_MS:
                    self._send(TokenBatch(req.request, tuple(batch)))
                    batch, sent = [], now
                if mask is not None and (not mask.consume(int(token)) or mask.finished):
                    reason, stop_id = FinishReason.STOP, int(token) if token in stops else None
                    break
                if token in stops:
                    reason, stop_id = FinishReason.STOP, int(token)
                    break
                if self.inbox.cancelled(req.request):
                    reason = FinishReason.CANCELLED
                    break
                if generated >= req.max_tokens:
                    break
                if llm.n_tokens >= llm.n_ctx() - 1:
                    reason = FinishReason.CONTEXT
                    break
        finally:
            if batch:
                self._send(TokenBatch(req.request, tuple(batch)))
        return reason, stop_id, generated, first_ms

    def _scored(self, token: int, now: float, top: int) -> TokenStep:
        """The token, with its log-probability and the `top` likeliest in its place when asked
        (from the logits it was sampled from: llama.cpp's last row at this point)."""
        if top <= 0:
            return TokenStep(token, now)
        import numpy as np

        n_vocab = self.llm.n_vocab()
        row = self.low.llama_get_logits_ith(self.llm._ctx.ctx, -1)
        logits = np.ctypeslib.as_array(row, shape=(n_vocab,)).astype(np.float64)
        peak = float(logits.max())
        logprobs = logits - (peak + float(np.log(np.exp(logits - peak).sum())))
        best = np.argpartition(-logprobs, top)[:top]
        best = best[np.argsort(-logprobs[best])]
        alternatives = tuple((int(i), float(logprobs[i])) for i in best)
        return TokenStep(token, now, float(logprobs[token]), alternatives)

    def _masks(self) -> Any:
        if self._mask_factory is None or self._mask_factory_llm is not self.llm:
            spare = spare_core(int(self.llm.n_threads))  # the next mask beside the decode
            self._mask_factory, self._mask_factory_llm = MaskFactory(self.llm, spare), self.llm
        return self._mask_factory

    # --- quick calls ----------------------------------------------------------------

    def piece(self, token: int, special: bool) -> bytes:
        vocab = self.llm._model.vocab
        n = self.low.llama_token_to_piece(vocab, token, self._buf, _PIECE_BUFFER, 0, special)
        return self._buf.raw[: max(n, 0)]

    def answer(self, query: Query) -> None:
        """Answer one quick question about the loaded model."""
        llm = self.llm
        value: Any
        match query:
            case Tokenize(text=text, special=special):
                raw = text.encode("utf-8", "replace")  # a lone surrogate is "?", never a crash
                value = llm.tokenize(raw, add_bos=False, special=special)
            case TokenTable():
                value = [self.piece(t, False) for t in range(llm.n_vocab())]
            case Logits(prompt=prompt, keep=keep):
                value = self.logits(list(prompt), keep)
            case SpecialBytes(ids=ids):
                value = [self.piece(t, True) for t in ids]
            case SpecialIds():
                value = Specials(llm.token_bos(), llm.token_eos(), bool(llm._model.add_bos_token()))
        self._send(Answer(query.request, value))
        if isinstance(query, Logits):
            self._keep(query.keep)

    def serve(self) -> None:
        while True:
            req = self.inbox.next()
            if isinstance(req, ShutdownRequest):
                self._drop_snapshots()
                return
            if isinstance(req, LoadRequest):
                self.load(req)
            elif self.llm is None:
                self._send(Refused(req.request, ErrorCode.NO_MODEL, "no model is loaded"))
            elif isinstance(req, GenerateRequest):
                self.generate(req)
            else:
                self.answer(req)
            self.inbox.done(req.request)


def serve(conn: Connection) -> None:
    """Process entry point."""
    # EOF or a broken pipe means the app went away: there is nothing left to answer.
    with contextlib.suppress(EOFError, BrokenPipeError, KeyboardInterrupt):
        _Worker(conn).serve()
