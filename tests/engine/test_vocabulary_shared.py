"""The loaded model's vocabulary crosses the worker's pipe once per load, on the real bundled
SmolLM2: every tokenizer (so every session) on one client reads the same table; a load (the
same file again) asks again, and the table is the model's own."""

from __future__ import annotations

from pathlib import Path

from app.engine.local.client import WorkerClient
from app.engine.local.tokenizer import ModelTokenizer


def test_every_tokenizer_on_a_client_shares_one_vocabulary_until_the_next_load(smollm_model: Path) -> None:
    client = WorkerClient()
    try:
        info = client.load(smollm_model, n_ctx=256, n_threads=1)
        first = ModelTokenizer(client).token_table()
        assert ModelTokenizer(client).token_table() is first  # asked once for this load
        assert len(first) == info.n_vocab
        hello = client.tokenize("Hello", special=False)
        assert b"".join(first[i] for i in hello) == b"Hello"
        client.load(smollm_model, n_ctx=256, n_threads=1)
        again = ModelTokenizer(client).token_table()
        assert again is not first and again == first  # asked again after the load
    finally:
        client.close()
    assert client.info is None
