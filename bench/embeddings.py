"""Embeddings benchmark: inputs/s through `harmony-desk serve`'s /v1/embeddings next to
llama-cpp-python's own `create_embedding` in-process, on the same GGUF and inputs, in one run.

Usage: python bench/embeddings.py [--embedding-model PATH] [--embedding-inputs 256]
                                  [--embedding-batch 32] [--threads 1] [--runs 3]
(bench/server.py runs it too, after its chat figures.)

The model: `--embedding-model PATH`, else a random-weight BERT of all-MiniLM-L6's shape (384
dimensions, 6 layers; tests/tiny_embedding.py), so the figures cost what a real small embedding
model costs. The inputs: `--inputs` sentences of 12 to 40 words, sent `--batch` to a request
with the `openai` SDK (its default encoding, base64) and given to `create_embedding` in the
same lists, with the same context and thread count; the median of `--runs`. One thing computes
at a time: the in-process model is closed before the server starts. Checked before printing
(no figures otherwise, exit status 1): every input got one finite, unit-length vector of the
model's size, through the server and in-process alike. Goal: a ratio ≥ 0.9.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2 as httpx
import numpy as np
import openai

ROOT = Path(__file__).resolve().parent.parent


def inputs(count: int) -> list[str]:
    """`count` sentences of 12 to 40 of the test vocabulary's words (the same every run)."""
    from tests.tiny_embedding import WORDS

    rng = np.random.default_rng(11)
    return [" ".join(rng.choice(WORDS, int(rng.integers(12, 41)))) for _ in range(count)]


def _batches(texts: list[str], size: int) -> list[list[str]]:
    return [texts[i : i + size] for i in range(0, len(texts), size)]


def _checked(vectors: list[list[float]], count: int, dims: int) -> str:
    """Why `vectors` are not one finite unit vector of `dims` per input ("" when they are)."""
    if len(vectors) != count:
        return f"{len(vectors)} vectors for {count} inputs"
    rows = np.asarray(vectors, dtype=np.float64)
    if rows.shape != (count, dims) or not np.isfinite(rows).all():
        return f"vectors of shape {rows.shape}, not ({count}, {dims}), or not finite"
    norms = np.linalg.norm(rows, axis=1)
    return "" if np.allclose(norms, 1.0, atol=1e-3) else "vectors not of unit length"


def _timed(
    embed: Callable[[list[str]], list[list[float]]], batches: list[list[str]]
) -> tuple[float, list[list[float]]]:
    began, got = time.perf_counter(), []
    for batch in batches:
        got += embed(batch)
    return time.perf_counter() - began, got


def _facts(path: str) -> tuple[int, int]:
    """The context the server gives the model (`app/engine/local/embedder.py`) and its size."""
    import gguf

    from app.engine.local.embedder import MAX_CONTEXT

    fields = gguf.GGUFReader(path).fields
    arch = fields["general.architecture"].contents()
    trained = int(fields[f"{arch}.context_length"].contents())
    return min(trained, MAX_CONTEXT), int(fields[f"{arch}.embedding_length"].contents())


def in_process(
    path: str, texts: list[str], batch: int, threads: int, runs: int
) -> tuple[float, str]:
    """llama-cpp-python's `create_embedding` (normalised here, as the server's are), with the
    context the server gives the model: inputs/s, and what is wrong with its vectors."""
    import llama_cpp

    context, _ = _facts(path)
    llm = llama_cpp.Llama(
        path,
        embedding=True,
        n_ctx=context,
        n_batch=context,
        n_ubatch=context,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )

    def embed(items: list[str]) -> list[list[float]]:
        rows = np.asarray([d["embedding"] for d in llm.create_embedding(items)["data"]])
        return list((rows / np.linalg.norm(rows, axis=1, keepdims=True)).tolist())

    try:
        embed(texts[:2])  # warm
        timings = [_timed(embed, _batches(texts, batch)) for _ in range(runs)]
        return len(texts) / statistics.median(t for t, _ in timings), _checked(
            timings[0][1], len(texts), llm.n_embd()
        )
    finally:
        llm.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _started(path: str, threads: int) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "app",
        "serve",
        "--model",
        "default",
        "--port",
        str(port),
        "--threads",
        str(threads),
        "--embedding-model",
        path,
    ]
    proc = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ}
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{base}/v1/models", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
    return proc, base


def through_server(
    path: str, texts: list[str], batch: int, threads: int, runs: int, dims: int
) -> tuple[float, str]:
    """The same through `serve` and the `openai` SDK: inputs/s, and what is wrong with them."""
    proc, base = _started(path, threads)
    try:
        api = openai.OpenAI(base_url=f"{base}/v1", api_key="none", max_retries=0, timeout=600)
        name = api.models.list().data[1].id

        def embed(items: list[str]) -> list[list[float]]:
            return [d.embedding for d in api.embeddings.create(model=name, input=items).data]

        embed(texts[:2])  # warm
        timings = [_timed(embed, _batches(texts, batch)) for _ in range(runs)]
        return len(texts) / statistics.median(t for t, _ in timings), _checked(
            timings[0][1], len(texts), dims
        )
    finally:
        proc.terminate()
        proc.wait(30)


def report(model: str | None, count: int, batch: int, threads: int, runs: int) -> int:
    """Run both and print the table (see the module); the exit status."""
    from tests.tiny_embedding import MINILM, build

    path = model or str(build("mean", shape=MINILM))
    texts = inputs(count)
    print(
        f"embeddings: {path}; {count} inputs, {batch} a request, {threads} thread(s),"
        f" median of {runs}"
    )
    ours_speed = 0.0
    theirs_speed, wrong = in_process(path, texts, batch, threads, runs)
    if not wrong:
        ours_speed, wrong = through_server(path, texts, batch, threads, runs, _facts(path)[1])
    if wrong:
        print(f"no figures: {wrong}")
        return 1
    print(
        f"every input: one unit vector, {count} of {count}, through the server and in-process alike"
    )
    print("| measure | through the server | in-process | ratio |")
    print("|---|---|---|---|")
    ratio = ours_speed / theirs_speed
    print(
        f"| embeddings inputs/s (openai SDK vs create_embedding) | {ours_speed:.1f} |"
        f" {theirs_speed:.1f} | {ratio:.2f} |"
    )
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--embedding-model", default=None, help="an embedding GGUF (default: MiniLM-shaped, random)"
    )
    parser.add_argument(
        "--embedding-inputs", type=int, default=256, help="inputs to embed (0: no embeddings bench)"
    )
    parser.add_argument("--embedding-batch", type=int, default=32, help="inputs a request")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(parser)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    return report(
        args.embedding_model, args.embedding_inputs, args.embedding_batch, args.threads, args.runs
    )


if __name__ == "__main__":
    sys.exit(main())
