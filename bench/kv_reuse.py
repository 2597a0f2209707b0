"""KV-cache reuse exactness after a long rollback, ours next to raw llama-cpp-python, per model.

Usage: python bench/kv_reuse.py [--threads 1] [--history 2000] [--keep 1000]

For the bundled Gemma 3 270M (sliding window 512) and the tiny gpt-oss (window 128): evaluate
`--history` tokens, roll back to the first `--keep` and evaluate 20 new ones (what happens when a
long analysis is dropped after a final answer, or a long answer is regenerated), then compare
the next token's logits with a fresh evaluation of the same tokens. Rows:
- ours: the worker as the app loads the model (gpt-oss: a full-size window cache; Gemma:
  llama.cpp's small one), then with the full-size window cache on and off; every rollback is
  checked against llama.cpp's own positions, and a prompt whose rollback the cache cannot hold
  is evaluated again (reused 0);
- reference: raw `Llama` with the same cache choices and llama-cpp-python's own rollback
  (`kv_cache_seq_rm`, which says yes either way).
Prints `exact: yes|no` with max |Δlogit| and how many tokens were reused. Checked before
printing a row (no figures otherwise, exit status 1): both evaluations gave a whole row of
logits, and no more than `--keep` tokens were reused.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.domain.placement import LoadSettings
from app.engine.local.client import WorkerClient
from app.library.bundled import gemma_model_path

EXACT = 1e-3


def token_runs(history: int, keep: int) -> tuple[list[int], list[int]]:
    rng = np.random.default_rng(0)
    ids = [int(x) for x in rng.integers(1000, 30000, history)]
    return ids, ids[:keep] + [int(x) for x in rng.integers(1000, 30000, 20)]


def ours(
    path: Path, swa_full: bool | None, threads: int, history: int, keep: int
) -> tuple[float, int]:
    """(max |Δlogit|, tokens reused) through the worker."""
    long, short = token_runs(history, keep)
    with WorkerClient() as client:
        client.load(path, n_ctx=4096, n_threads=threads, settings=LoadSettings(swa_full=swa_full))
        client.logits(long)
        reused, after = client.logits(short)
        client.logits([short[0] + 1])
        _, fresh = client.logits(short)
    if not len(after) or len(after) != len(fresh) or reused > keep:
        raise SystemExit(
            f"no figures: logits of {len(after)} and {len(fresh)} bytes, {reused} reused"
        )
    delta = np.abs(np.frombuffer(after, np.float32) - np.frombuffer(fresh, np.float32))
    return float(delta.max()), int(reused)


def _raw_child(
    path: str, swa_full: bool | None, threads: int, history: int, keep: int, out: Connection
) -> None:
    import llama_cpp
    import llama_cpp.llama_cpp as low

    original = low.llama_model_default_params

    def params() -> object:
        p = original()
        p.use_extra_bufts = False  # weight repacking crashes on these CPUs (as our worker does)
        return p

    low.llama_model_default_params = params

    def last(llm: llama_cpp.Llama) -> np.ndarray:
        row = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
        return np.ctypeslib.as_array(row, shape=(llm.n_vocab(),)).copy()

    extra = {} if swa_full is None else {"swa_full": swa_full}
    llm = llama_cpp.Llama(path, n_ctx=4096, n_batch=256, n_threads=threads, verbose=False, **extra)
    long, short = token_runs(history, keep)
    llm.eval(long)
    ok = llm._ctx.kv_cache_seq_rm(-1, keep, -1)  # what Llama.generate does on a prefix match
    llm.n_tokens = keep if ok else 0
    llm.eval(short[llm.n_tokens :])
    after = last(llm)
    llm.reset()
    llm._ctx.kv_cache_clear()
    llm.eval(short)
    out.send((float(np.abs(after - last(llm)).max()), keep if ok else 0))


def raw(
    path: Path, swa_full: bool | None, threads: int, history: int, keep: int
) -> tuple[float, int]:
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_raw_child, args=(str(path), swa_full, threads, history, keep, child))
    proc.start()
    child.close()  # a child that dies then reads as EOF here, not as a wait for ever
    try:
        result: tuple[float, int] = parent.recv()
    except EOFError:
        proc.join()
        raise SystemExit(f"the raw llama-cpp-python run died (exit code {proc.exitcode})") from None
    proc.join()
    return result


def models() -> list[tuple[str, Path]]:
    from tests.tiny_gpt_oss import build

    return [("Gemma 3 270M", gemma_model_path()), ("tiny gpt-oss", Path(build()))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--history", type=int, default=2000)
    ap.add_argument("--keep", type=int, default=1000)
    args = ap.parse_args()
    print(
        f"rollback: {args.history} tokens evaluated, the first {args.keep} kept, 20 new;"
        f" {args.threads} thread(s), nothing else running"
    )
    print(f"{'model':14}{'path':44}{'exact':>7}{'max|Δlogit|':>13}{'reused':>8}")
    for name, path in models():
        rows = [
            ("ours (as the app loads it)", ours, None),
            ("ours, full-size window cache on", ours, True),
            ("ours, full-size window cache off", ours, False),
            ("raw Llama, llama.cpp's default cache", raw, None),
            ("raw Llama, window cache not full-size", raw, False),
        ]
        for label, run, swa in rows:
            delta, reused = run(path, swa, args.threads, args.history, args.keep)
            exact = "yes" if delta < EXACT else "no"
            print(f"{name:14}{label:44}{exact:>7}{delta:>13.4f}{reused:>8}")


if __name__ == "__main__":
    main()
