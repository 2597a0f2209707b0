"""The embedding worker: a second model worker process that holds one embedding GGUF.

Runs `serve(conn)` in its own OS process (so a llama.cpp abort stays out of the app), on the
same pipe, inbox and messages as the chat worker (`main.py`): a `LoadRequest` loads the model
in llama.cpp's embedding mode (one context of `n_ctx` tokens that is also its batch, so any
input that fits the context is evaluated whole, as a non-causal model needs), pooled as the
GGUF says; an `Embed` is answered by an `Embedded` (unit vectors, float32) or a
`NotEmbedded`. Guarantees: a model whose GGUF names no pooling (or a reranker's) is refused at
load with the reason; an input that is empty, longer than the context, or holds a token id
outside the vocabulary is a `NotEmbedded` before anything is evaluated (llama.cpp would abort
on a bad id); each input is evaluated on its own, so the same input gives the same vector, bit
for bit, whatever else the request holds; every request gets an answer.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from app.domain.embedding import Embedded, EmbedInput, NotEmbedded, Refusal
from app.engine.protocol import (
    Answer,
    Embed,
    Loaded,
    LoadFailed,
    LoadProgress,
    LoadRequest,
    ModelInfo,
    Refused,
    Request,
    ShutdownRequest,
)
from app.engine.worker.inbox import Inbox
from app.engine.worker.load_guard import neutralise_chat_templates
from app.engine.worker.native_log import Gathered, log, native_log
from app.engine.worker.placement import llama_arguments, placement_for
from app.errors import ErrorCode

POOLED = {1: "mean", 2: "cls", 3: "last"}  # llama_pooling_type values /v1/embeddings serves


class _EmbeddingWorker:
    def __init__(self, conn: Connection) -> None:
        import llama_cpp
        import llama_cpp.llama_cpp as low_level

        self.lc, self.low = llama_cpp, low_level
        gathered = Gathered()
        log.addHandler(gathered)
        log.setLevel(logging.INFO)
        self._log_callback = low_level.llama_log_callback(native_log)
        low_level.llama_log_set(self._log_callback, ctypes.c_void_p(0))
        self.inbox = Inbox(conn, gathered.take)
        self.llm: Any = None

    def load(self, req: LoadRequest) -> None:
        start = time.perf_counter()
        self.llm = None
        neutralise_chat_templates(self.lc)
        self.inbox.send(LoadProgress(req.request, 0.0))
        try:
            vocab = self.lc.Llama(model_path=req.path, vocab_only=True, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            self.inbox.send(LoadFailed(req.request, "vocabulary", str(exc)))
            return
        placement = placement_for(
            req.settings, vocab.metadata, self.low.llama_supports_gpu_offload()
        )
        del vocab
        try:
            llm = self.lc.Llama(
                model_path=req.path,
                embedding=True,
                n_ctx=req.n_ctx,
                n_batch=req.n_ctx,
                n_ubatch=req.n_ctx,
                n_threads=req.n_threads,
                n_threads_batch=req.n_threads,
                verbose=False,
                **llama_arguments(placement),
            )
        except (ValueError, RuntimeError, OSError) as exc:
            self.inbox.send(LoadFailed(req.request, "weights", str(exc)))
            return
        pooling = int(llm.pooling_type())
        if pooling not in POOLED:
            said = "none" if pooling == 0 else "rank (a reranker)" if pooling == 4 else pooling
            why = (
                f"it is not an embedding model llama.cpp can pool: its GGUF says pooling"
                f" {said}, and /v1/embeddings needs mean, cls or last"
            )
            self.inbox.send(Refused(req.request, ErrorCode.INPUT_INVALID, why))
            return
        self.llm = llm
        info = ModelInfo(
            path=req.path,
            n_vocab=llm.n_vocab(),
            n_ctx=llm.n_ctx(),
            n_ctx_train=llm._model.n_ctx_train(),
            architecture=str(llm.metadata.get("general.architecture", "")),
            n_threads=req.n_threads,
            load_ms=(time.perf_counter() - start) * 1000,
            metadata={k: v for k, v in llm.metadata.items() if len(v) < 65536}
            | {"harmony-desk.pooling": POOLED[pooling], "harmony-desk.n_embd": str(llm.n_embd())},
            placement=placement,
        )
        self.inbox.send(Loaded(req.request, info))

    # --- embedding ------------------------------------------------------------------

    def _tokens(self, index: int, item: EmbedInput) -> list[int] | NotEmbedded:
        """The ids of one input, or why it cannot be embedded."""
        llm = self.llm
        ids: list[int]
        if isinstance(item, str):
            ids = llm.tokenize(item.encode("utf-8", "replace"), add_bos=True, special=True)
        else:
            ids = list(item)
            n_vocab = llm.n_vocab()
            bad = next((t for t in ids if not 0 <= t < n_vocab), None)
            if bad is not None:
                why = (
                    f"input {index} holds the token id {bad}: the vocabulary is 0 to {n_vocab - 1}"
                )
                return NotEmbedded(index, Refusal.BAD_TOKEN, why)
        if not ids:
            return NotEmbedded(index, Refusal.EMPTY, f"input {index} is empty: it has no tokens")
        if len(ids) > llm.n_ctx():
            why = (
                f"input {index} is too large: {len(ids)} tokens, and the embedding model's"
                f" context holds {llm.n_ctx()}"
            )
            return NotEmbedded(index, Refusal.TOO_LONG, why)
        return ids

    def embed(self, inputs: Sequence[EmbedInput]) -> Embedded | NotEmbedded:
        batches: list[list[int]] = []
        for index, item in enumerate(inputs):
            ids = self._tokens(index, item)
            if isinstance(ids, NotEmbedded):
                return ids
            batches.append(ids)
        rows = self._pooled(batches)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        rows = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
        vectors = rows.astype("<f4").tobytes()
        return Embedded(vectors, int(rows.shape[1]), tuple(len(ids) for ids in batches))

    def _pooled(self, inputs: list[list[int]]) -> np.ndarray:
        """The pooled (not yet normalised) vector of each input, each decoded on its own: in a
        batch beside others, llama.cpp's sums run in another order and the last bits of a
        vector would depend on its neighbours (on the CPU, one at a time costs about 2%)."""
        llm = self.llm
        out = np.zeros((len(inputs), llm.n_embd()), dtype=np.float32)
        for row, ids in enumerate(inputs):
            llm._batch.reset()
            llm._batch.add_sequence(ids, 0, True)
            llm._ctx.kv_cache_clear()
            llm._ctx.decode(llm._batch)
            ptr = self.low.llama_get_embeddings_seq(llm._ctx.ctx, 0)
            out[row] = np.ctypeslib.as_array(ptr, shape=(out.shape[1],))
        llm._batch.reset()
        return out

    # --- the loop -------------------------------------------------------------------

    def _take(self, req: Request) -> bool:
        """Serve `req`; False on shutdown."""
        if isinstance(req, ShutdownRequest):
            return False
        if isinstance(req, LoadRequest):
            try:
                self.load(req)
            finally:
                self.inbox.hold = False
        elif self.llm is None:
            self.inbox.send(Refused(req.request, ErrorCode.NO_MODEL, "no model is loaded"))
        elif isinstance(req, Embed):
            self.inbox.send(Answer(req.request, self.embed(req.inputs)))
        else:
            said = f"the embedding worker answers embeddings, not {type(req).__name__}"
            self.inbox.send(Refused(req.request, ErrorCode.INPUT_INVALID, said))
        self.inbox.done(req.request)
        return True

    def serve(self) -> None:
        while self._take(self.inbox.next()):
            pass


def serve(conn: Connection) -> None:
    """Process entry point."""
    with contextlib.suppress(EOFError, BrokenPipeError, KeyboardInterrupt):
        _EmbeddingWorker(conn).serve()


__all__ = ["POOLED", "serve"]
