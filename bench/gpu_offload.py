"""GPU offload: decode speed with every layer on the GPU next to all on the CPU, through our
worker and through raw llama-cpp-python, measured in one run.

Usage: python bench/gpu_offload.py [--model PATH] [--threads N] [--tokens 256]

Without `--model` it builds a random-weight model of llama.cpp's gpt-oss architecture (12
layers, 1,024 wide, 16 experts of which 2 are used, the full o200k vocabulary; about 0.9 B
parameters in F32/F16) with the test builder: random weights decode at the speed real ones do.
On a CPU-only build of llama-cpp-python it says so and measures the CPU only. Rows: decode
tok/s, ours vs raw `Llama.generate` (same prompt, greedy, same threads), for `--gpu-layers 0`
and all layers; then GPU / CPU. Checked before printing (no figures otherwise, exit status
1): every run, ours and raw, generated `--tokens` tokens.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.domain.events import TokenStep
from app.domain.placement import LoadSettings
from app.domain.sampling import Sampling
from app.engine.cores import default_threads
from app.engine.local.client import WorkerClient

PROMPT = (
    [200006, 1428, 200008]
    + [1000 + (i * 7919) % 20000 for i in range(64)]
    + [200007, 200006, 173781]
)


def build_model(folder: Path) -> Path:
    import tests.tiny_gpt_oss as builder

    builder.N_EMBD, builder.N_HEAD, builder.N_HEAD_KV, builder.HEAD_DIM = 1024, 16, 4, 64
    builder.N_FF, builder.N_EXPERT, builder.N_LAYER = 1024, 16, 12
    path = folder / "gpt-oss-arch-0.9b-random.gguf"
    builder._write(path, 1234, ())
    return path


def _raw_child(path: str, layers: int, threads: int, n: int, out: Connection) -> None:
    import llama_cpp

    llm = llama_cpp.Llama(
        path,
        n_ctx=4096,
        n_batch=256,
        n_threads=threads,
        n_threads_batch=threads,
        n_gpu_layers=layers,
        verbose=False,
    )
    rates = []
    for _ in range(3):
        stamps = []
        for _token in llm.generate(PROMPT, temp=0.0, top_k=0, top_p=1.0, min_p=0.0, reset=True):
            stamps.append(time.perf_counter())
            if len(stamps) >= n:
                break
        if len(stamps) != n:
            out.send(f"raw Llama.generate made {len(stamps)} of {n} tokens")
            return
        rates.append((len(stamps) - 1) / (stamps[-1] - stamps[0]))
    out.send((statistics.median(rates), bool(llama_cpp.llama_supports_gpu_offload())))


def raw(path: Path, layers: int, threads: int, n: int) -> tuple[float, bool]:
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_raw_child, args=(str(path), layers, threads, n, child))
    proc.start()
    child.close()  # a child that dies then reads as EOF here, not as a wait for ever
    try:
        result: tuple[float, bool] | str = parent.recv()
    except EOFError:
        proc.join()
        raise SystemExit(f"the raw llama-cpp-python run died (exit code {proc.exitcode})") from None
    proc.join()
    if isinstance(result, str):
        raise SystemExit(f"no figures: {result}")
    return result


def ours(path: Path, layers: int, threads: int, n: int) -> tuple[float, str]:
    with WorkerClient() as client:
        info = client.load(
            path, n_ctx=4096, n_threads=threads, settings=LoadSettings(gpu_layers=layers)
        )
        rates = []
        for _ in range(3):
            stamps = [
                time.perf_counter()
                for e in client.generate(
                    PROMPT, stop_ids=[], sampling=Sampling(temperature=0.0), max_tokens=n
                )
                if isinstance(e, TokenStep)
            ]
            if len(stamps) != n:
                raise SystemExit(f"no figures: our worker generated {len(stamps)} of {n} tokens")
            rates.append((len(stamps) - 1) / (stamps[-1] - stamps[0]))
    return statistics.median(rates), info.placement.words() if info.placement else "CPU"


def _row(label: str, ours: float, raw: float) -> None:
    print(f"{label:34}{ours:>10.1f}{raw:>10.1f}{ours / raw:>8.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", type=Path)
    ap.add_argument("--threads", type=int, default=default_threads())
    ap.add_argument("--tokens", type=int, default=256)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.model or build_model(Path(tmp))
        cpu_raw, offload = raw(path, 0, args.threads, args.tokens)
        cpu_ours, _ = ours(path, 0, args.threads, args.tokens)
        print(
            f"model {path.name}, {args.threads} threads, greedy, {args.tokens} tokens;"
            f" llama.cpp GPU offload: {'yes' if offload else 'no (a CPU-only build)'}"
        )
        print(f"{'decode tok/s':34}{'ours':>10}{'raw':>10}{'ratio':>8}")
        _row("all on the CPU (gpu_layers 0)", cpu_ours, cpu_raw)
        if offload:
            gpu_raw, _ = raw(path, -1, args.threads, args.tokens)
            gpu_ours, where = ours(path, -1, args.threads, args.tokens)
            _row(f"all on the GPU ({where})", gpu_ours, gpu_raw)
            print(f"{'GPU / CPU':34}{gpu_ours / cpu_ours:>10.2f}{gpu_raw / cpu_raw:>10.2f}")


if __name__ == "__main__":
    main()
