"""The embedding model `harmony-desk serve` answers /v1/embeddings with.

Guarantees: with `--embedding-model PATH` it is that GGUF, loaded in llama.cpp's embedding mode
in its own worker process (`app/engine/local/embedder.py`) before the server listens — a file
that cannot be loaded, or is no embedding model, stops `serve` with the reason — and the worker
is stopped with the server; without it, the app's own document embedding model (WordLlama,
`app/documents/embedder.py`), in process, named as such in /v1/models.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from app.documents.embedder import WordLlamaEmbedder
from app.domain.embedding import Embedder
from app.engine.local.embedder import EmbeddingClient


@contextlib.contextmanager
def open_embedder(path: str | None, n_threads: int | None) -> Iterator[Embedder]:
    """The embedding model for `path` (None: WordLlama), open while the block runs."""
    if path is None:
        yield WordLlamaEmbedder()
        return
    client = EmbeddingClient()
    try:
        facts = client.load_embedding_model(path, n_threads=n_threads)
        said = (
            f"Embeddings: {facts.name} ({facts.dims} dimensions, {facts.context} tokens an input)"
        )
        print(said, file=sys.stderr, flush=True)
        yield client
    finally:
        client.close()


__all__ = ["open_embedder"]
