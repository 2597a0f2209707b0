"""`EmbeddingClient`: an embedding GGUF served from its own worker process.

Why a second worker, not the chat worker: the embedding model is another model, in
llama.cpp's embedding mode (a context whose batch is the whole context, pooled, no sampling,
no KV reuse), which the chat worker's scheduler, sequences and snapshots have no use for; in
its own process an abort on either model leaves the other serving. It is the chat worker's
machinery all the same — `WorkerClient`'s loading (typed load errors, the stall timer, a
restart and reload after a death) and its pipe, router and quick questions — with one more
question, `Embed`.

Guarantees: the model loads with `context` tokens (at most its trained context); `embed` gives
an `Embedded` (unit vectors) or a `NotEmbedded` value (an input empty, too long or with a bad
token id), never an exception for an input; a dead or silent worker is a `WorkerError`, and the
next call starts a new one and loads the model again.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from app.domain.embedding import Embedded, EmbedderFacts, EmbedInput, NotEmbedded
from app.engine.local.client import WorkerClient
from app.engine.local.process import WorkerProcess
from app.engine.local.router import Router
from app.engine.protocol import Embed
from app.errors import WorkerError
from app.gguf.info import read_model

MAX_CONTEXT = 8192  # tokens an input may have, at most (the model's own context if smaller)


class EmbeddingClient(WorkerClient):
    """One embedding worker and the embedding GGUF loaded in it (an `Embedder`)."""

    def _ensure_process(self) -> Router:
        if self._router is None:
            self._router = Router(WorkerProcess(embedding=True), self._logged)
        return self._router

    def load_embedding_model(self, path: str | Path, n_threads: int | None = None) -> EmbedderFacts:
        """Load `path` in embedding mode; its facts (a `ModelLoadError` when it cannot be)."""
        trained = read_model(path).context_length
        context = min(trained, MAX_CONTEXT) if trained > 0 else MAX_CONTEXT
        info = self.load(path, n_ctx=context, n_threads=n_threads)
        created = int(os.stat(path).st_mtime) if Path(path).exists() else 0
        dims = int(info.metadata.get("harmony-desk.n_embd", "0"))
        self._facts = EmbedderFacts(Path(path).stem, dims, info.n_ctx, False, created=created)
        return self._facts

    @property
    def facts(self) -> EmbedderFacts:
        return self._facts

    def embed(self, inputs: Sequence[EmbedInput]) -> Embedded | NotEmbedded:
        answer = self._ask(lambda r: Embed(r, tuple(inputs)))
        if not isinstance(answer, Embedded | NotEmbedded):
            raise WorkerError(f"the embedding worker answered {type(answer).__name__}")
        return answer


__all__ = ["MAX_CONTEXT", "EmbeddingClient"]
