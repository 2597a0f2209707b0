"""The model worker: the only process that imports llama.cpp.

Runs `serve(conn)` in its own OS process: loads one GGUF model (with `sequences` KV sequences,
each holding a whole context, and optionally a draft model), generates from prompt ids —
several generations decoded together (`scheduler.py`) — and answers quick questions: those
that only read the vocabulary (tokenize, token bytes) at once on the inbox's thread, beside a
decode step (`inbox.py`), logits between two steps; each reply tagged with its request's id.
Guarantees: every request gets an answer on the pipe; requests are taken in the order they
came, a load, a shutdown or a logits question only once no generation is under way or queued
(those sent after it wait behind it); a generation checks for a `Cancel` of its request
between steps (and between graph nodes while a prompt chunk is evaluated, and within JSON
mode's closer while it works out an ending) and ends with `GenerationDone(CANCELLED)` when
one came — the client cancels a generation past its
deadline this way (`app/engine/local/client.py`), so none holds the worker; a prompt that
does not fit, or a grammar the vocabulary cannot follow, is `Refused` with its code and the
worker stays ready; a load failure says at which stage it failed (vocabulary: architecture,
hyper-parameters, tokenizer; weights: tensors) so the client can type the error without
reading llama.cpp's text, and a draft model that cannot draft for the model is refused at
the "draft" stage with the reason. If llama.cpp aborts the process, the client sees the pipe
close and reports it. A model's stored chat templates are never compiled (`load_guard.py`).
Imports only the protocol, the core count and JSON mode (`app.constrain`).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import threading
import time
from functools import partial
from multiprocessing.connection import Connection
from typing import Any

from app.engine.cores import spare_core
from app.engine.protocol import (
    Answer,
    Embed,
    Evaluated,
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
    Request,
    ShutdownRequest,
    SpecialBytes,
    SpecialIds,
    Specials,
    Tokenize,
    TokenTable,
)
from app.engine.worker.draft_model import DraftModel, same_vocabulary
from app.engine.worker.inbox import Inbox
from app.engine.worker.kv_snapshots import snapshots_for
from app.engine.worker.load_guard import neutralise_chat_templates
from app.engine.worker.loading import llama_for
from app.engine.worker.masking import MaskFactory
from app.engine.worker.native_log import Gathered, log, native_log
from app.engine.worker.placement import as_loaded, placement_for
from app.engine.worker.scheduler import Scheduler
from app.engine.worker.sequences import Pool
from app.engine.worker.vision import Vision, projector_stamp
from app.errors import ErrorCode

_PIECE_BUFFER = 256  # bytes; llama-cpp-python's own 32-byte buffer truncates long tokens
FA_ROWS = 63  # llama.cpp's CPU flash attention takes another kernel from 64 rows of a sequence


def _speculation(low: Any, llm: Any, asked: str) -> str:
    """None for a recurrent or hybrid model (its state cannot drop rejected drafts)."""
    recurrent = low.llama_model_is_recurrent(m := llm._model.model) or low.llama_model_is_hybrid(m)
    return "off" if recurrent else asked


class _Worker:
    def __init__(self, conn: Connection) -> None:
        import llama_cpp
        import llama_cpp.llama_cpp as low_level

        self.lc = llama_cpp
        self.low = low_level  # the module `Llama` reads its default params from
        self.gathered = Gathered()
        log.addHandler(self.gathered)
        log.setLevel(logging.INFO)
        self.llm: Any = None
        self._local = threading.local()  # a piece buffer per thread (the inbox answers too)
        self.inbox = Inbox(conn, self.gathered.take, self._answers_now, self._answer_now)
        self._send = self.inbox.send
        self.draft_llm: Any = None
        self.scheduler: Scheduler | None = None
        self.pool: Pool = None  # type: ignore[assignment]  # set by every load
        self._mask_factory: Any = None
        self._mask_factory_llm: Any = None
        self.n_batch = 0
        self._eval_batch: Any = None
        self._evaluated: Any = None  # the sequence the last logits question evaluated
        self._log_callback = low_level.llama_log_callback(native_log)
        low_level.llama_log_set(self._log_callback, ctypes.c_void_p(0))

    # --- loading --------------------------------------------------------------------

    def _llama(self, req: LoadRequest, path: str, placement: Any) -> Any:
        """A `Llama` for `path` with the request's context, threads and sequences."""
        cancelled = partial(self.inbox.cancelled, req.request)
        return llama_for(self.lc, self.low, req, path, placement, self._send, cancelled)

    def load(self, req: LoadRequest) -> None:
        start = time.perf_counter()
        self._unload()
        neutralise_chat_templates(self.lc)  # a stored chat template never runs here
        weights = self._load_weights(req)
        if weights is None:
            return
        placement, offload = weights
        draft, why = self._draft(req, placement)
        if why:
            self._unload()
            self._send(LoadFailed(req.request, "draft", why))
            return
        vision = self._vision(req, offload and placement.gpu_layers > 0)
        if isinstance(vision, str):
            if draft is not None:
                draft.close()
            self._unload()
            self._send(LoadFailed(req.request, "projector", vision))
            return
        self._make_pool(req, placement)
        self._make_scheduler(req, draft, vision)
        self._send(Loaded(req.request, self._model_info(req, placement, vision, start)))

    def _load_weights(self, req: LoadRequest) -> tuple[Any, bool] | None:
        """Place the model by its vocabulary and load its weights into `self.llm`: the placement
        as loaded and whether the GPU takes offload, or None once a `LoadFailed` is sent."""
        try:
            vocab = self.lc.Llama(model_path=req.path, vocab_only=True, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            self._send(LoadFailed(req.request, "vocabulary", str(exc)))
            return None
        offload = self.low.llama_supports_gpu_offload()
        placement = placement_for(req.settings, vocab.metadata, offload)
        del vocab
        try:
            self.llm = self._llama(req, req.path, placement)
        except (ValueError, RuntimeError, OSError) as exc:
            cancelled = self.inbox.cancelled(req.request)
            self._send(LoadFailed(req.request, "weights", str(exc), cancelled=cancelled))
            return None
        llm = self.llm
        return as_loaded(placement, llm.model_params, llm.context_params), offload

    def _make_pool(self, req: LoadRequest, placement: Any) -> None:
        """The prompt chunk size, the evaluation batch and the KV sequences with snapshots."""
        llm = self.llm
        # on the CPU with flash attention, prompts go in chunks below its 64-row tile, so that
        # chunks of every size take one kernel and reuse stays exact (`placement.py`)
        cpu_fa = placement.flash_attn and placement.gpu_layers == 0
        self.n_batch = min(req.n_batch, FA_ROWS) if cpu_fa else req.n_batch
        self._eval_batch = self.low.llama_batch_init(req.n_batch, 0, 1)
        reserved = req.reserved if req.sequences > 1 else 0
        self.pool = Pool(llm, self.low, max(1, req.sequences), reserved, placement.sliding_window)
        stamp = projector_stamp(req.projector)
        self.pool.snapshots = snapshots_for(
            llm, self.low, req.snapshots, placement, self.pool.holds, stamp
        )

    def _make_scheduler(
        self, req: LoadRequest, draft: DraftModel | None, vision: Vision | None
    ) -> None:
        """The scheduler that decodes generations over the pool, with its draft and vision."""
        llm = self.llm
        self.scheduler = Scheduler(
            llm,
            self.low,
            self.pool,
            self._send,
            self.inbox.cancelled,
            self._mask_for,
            req.n_batch,
            _speculation(self.low, llm, req.settings.speculative),
            draft,
        )
        self.scheduler.chunk = self.n_batch
        self.scheduler.drafter.always_draft = req.always_draft
        self.scheduler.images.vision = vision

    def _model_info(
        self, req: LoadRequest, placement: Any, vision: Vision | None, start: float
    ) -> ModelInfo:
        """What the client hears about the model just loaded (`start`: when the load began)."""
        llm = self.llm
        assert self.scheduler is not None
        return ModelInfo(
            path=req.path,
            n_vocab=llm.n_vocab(),
            n_ctx=int(self.low.llama_n_ctx_seq(llm._ctx.ctx)),
            n_ctx_train=llm._model.n_ctx_train(),
            architecture=str(llm.metadata.get("general.architecture", "")),
            n_threads=req.n_threads,
            load_ms=(time.perf_counter() - start) * 1000,
            metadata={k: v for k, v in llm.metadata.items() if len(v) < 65536},
            placement=placement,
            sequences=len(self.pool.all),
            speculative=self.scheduler.drafter.speculative,
            **(vision.facts() if vision is not None else {}),
        )

    def _vision(self, req: LoadRequest, gpu: bool) -> Vision | str | None:
        """The model's projector (None when it has none asked), or why it cannot be used.
        The client hears the stage first: llama.cpp may abort on a damaged projector."""
        if not req.projector:
            return None
        self._send(LoadProgress(req.request, 1.0, "projector"))
        errors = self.gathered.errors  # what llama.cpp logs while it loads, read after
        return Vision.load(req.projector, self.llm._model.model, req.n_threads, gpu, errors)

    def _draft(self, req: LoadRequest, placement: Any) -> tuple[DraftModel | None, str]:
        """The draft model the load settings ask for, or why it cannot draft for the model."""
        path = req.settings.draft_model
        if req.settings.speculative != "draft":
            return None, ""
        name = path.rsplit("/", 1)[-1] or "(none chosen)"
        if not path:
            return None, "speculative decoding with a draft model needs one: choose its GGUF"
        try:
            self.draft_llm = self._llama(req, path, placement)
        except (ValueError, RuntimeError, OSError) as exc:
            return None, f"the draft model {name} could not be loaded: {exc}"
        why = same_vocabulary(self.llm, self.draft_llm, lambda m, t: self.piece(t, True, m))
        if why:
            return None, f"the draft model {name} cannot draft for this model: {why}"
        return DraftModel(self.draft_llm, self.low, req.n_batch), ""

    def _unload(self) -> None:
        if self.pool is not None and self.pool.snapshots is not None:
            self.pool.snapshots.flush(timeout=4.0)  # what the last answer left reaches the disk
        if self.scheduler is not None:
            self.scheduler.close()
        if self._eval_batch is not None:
            self.low.llama_batch_free(self._eval_batch)
        self.scheduler, self._eval_batch, self.llm, self.draft_llm = None, None, None, None
        self.pool = None  # type: ignore[assignment]

    # --- generation -----------------------------------------------------------------

    def logits(self, prompt: list[int], keep: Keep | None) -> Evaluated:
        """Evaluate `prompt` as a generation would (the same sequence choice, reuse and
        snapshots) and give how, with the next token's logits (float32 bytes): the exactness
        check. Asked only when no generation is under way."""
        pool = self.pool
        seq = pool.choose(prompt, reserved=True) or pool.all[0]
        reused, restored = pool.prepare(seq, prompt, keep)
        tail = prompt[len(seq.tokens) :]
        for start in range(0, len(tail), self.n_batch):
            chunk = tail[start : start + self.n_batch]
            batch = self._spelled(chunk, seq.id, len(seq.tokens))
            if self.low.llama_decode(self.llm._ctx.ctx, batch) != 0:
                raise RuntimeError("llama.cpp could not evaluate the prompt")
            seq.tokens.extend(chunk)
            if keep is not None:  # as a generation's read keeps them
                pool.checkpoint(seq, len(prompt) - len(seq.tokens), self.n_batch)
        n_vocab = self.llm.n_vocab()
        row = self.low.llama_get_logits_ith(self.llm._ctx.ctx, -1)
        self._evaluated = seq  # its state is kept once the answer went out (`_keep`)
        return Evaluated(
            reused, restored.count, restored.source, ctypes.string_at(row, n_vocab * 4)
        )

    def _spelled(self, chunk: list[int], seq: int, pos: int) -> Any:
        batch = self._eval_batch
        for i, token in enumerate(chunk):
            batch.token[i], batch.pos[i] = token, pos + i
            batch.n_seq_id[i], batch.seq_id[i][0] = 1, seq
            batch.logits[i] = i == len(chunk) - 1
        batch.n_tokens = len(chunk)
        return batch

    def _mask_for(self, req: GenerateRequest) -> tuple[Any, str]:
        """The JSON mode's token mask for `req`, or why not (`MaskFactory.for_request`)."""
        if req.grammar is None:  # (no model's vocabulary read for llguidance)
            return None, ""
        cancelled = partial(self.inbox.cancelled, req.request)  # stops the closer's work
        mask, why = self._masks().for_request(req, lambda t: self.piece(t, True), cancelled)
        return mask, str(why)

    def _masks(self) -> Any:
        if self._mask_factory is None or self._mask_factory_llm is not self.llm:
            spare = spare_core(int(self.llm.n_threads))  # the next mask beside the decode
            self._mask_factory, self._mask_factory_llm = MaskFactory(self.llm, spare), self.llm
        return self._mask_factory

    # --- quick calls ----------------------------------------------------------------

    def piece(self, token: int, special: bool, llm: Any = None) -> bytes:
        vocab = (llm or self.llm)._model.vocab
        buf = getattr(self._local, "buf", None)
        if buf is None:
            buf = self._local.buf = ctypes.create_string_buffer(_PIECE_BUFFER)
        n = self.low.llama_token_to_piece(vocab, token, buf, _PIECE_BUFFER, 0, special)
        return buf.raw[: max(n, 0)]

    def _answers_now(self, req: Request) -> bool:
        """A question that only reads the vocabulary: the inbox's thread answers it at once."""
        return self.llm is not None and isinstance(
            req, (Tokenize, TokenTable, SpecialBytes, SpecialIds)
        )

    def _answer_now(self, req: Request) -> None:
        if isinstance(req, (Tokenize, TokenTable, SpecialBytes, SpecialIds)):
            self.answer(req)
            self.inbox.done(req.request)

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

    def _keep(self, keep: Keep | None) -> None:
        """After the answer went out: keep the evaluated cache's state for `keep`."""
        if keep is not None and self.pool.snapshots is not None and self._evaluated is not None:
            self.pool.snapshots.keep(keep, self._evaluated)

    def _takes(self, req: Request) -> bool:
        """Whether `req` can be taken now: a load, a shutdown or a logits question waits for
        the generations under way and queued (and so does everything sent after it)."""
        if self.scheduler is None or not self.scheduler.busy:
            return True
        return isinstance(req, (GenerateRequest, Tokenize, TokenTable, SpecialBytes, SpecialIds))

    def _take(self, req: Request) -> bool:
        """Serve `req` (a generation is handed to the scheduler); False on shutdown."""
        if isinstance(req, ShutdownRequest):
            with self.inbox.answering:
                self._unload()
            return False
        if isinstance(req, LoadRequest):
            with self.inbox.answering:  # no quick answer reads the model being replaced
                try:
                    self.load(req)
                finally:
                    self.inbox.hold = False
        elif self.llm is None or self.scheduler is None:
            self._send(Refused(req.request, ErrorCode.NO_MODEL, "no model is loaded"))
        elif isinstance(req, GenerateRequest):
            self.scheduler.submit(req)
            return True  # its request is over when it finishes, not now
        elif isinstance(req, Embed):  # the embedding worker's question (`embedding.py`)
            said = "the chat model's worker has no embeddings: the embedding worker answers them"
            self._send(Refused(req.request, ErrorCode.INPUT_INVALID, said))
        else:
            self.answer(req)
        self.inbox.done(req.request)
        return True

    def serve(self) -> None:
        while True:
            busy = self.scheduler is not None and self.scheduler.busy
            req = self.inbox.head(block=not busy)
            while req is not None and self._takes(req):
                self.inbox.pop()
                if not self._take(req):
                    return
                req = self.inbox.head(block=False)
            if self.scheduler is not None and self.scheduler.busy:
                self.scheduler.step()
                self._forget_ended()

    def _forget_ended(self) -> None:
        """Late cancels of generations that ended mean nothing."""
        assert self.scheduler is not None
        for request in self.scheduler.ended():
            self.inbox.done(request)


def serve(conn: Connection) -> None:
    """Process entry point."""
    # EOF or a broken pipe means the app went away: there is nothing left to answer.
    with contextlib.suppress(EOFError, BrokenPipeError, KeyboardInterrupt):
        _Worker(conn).serve()
