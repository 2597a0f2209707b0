"""Engine benchmark: our worker path next to raw llama-cpp-python, measured in one run.

Usage: python bench/engine.py [--tokens 128] [--threads 1] [--turns 20] [--only gemma|tiny]
                              [--gpu-layers N]

Prints, per model (the bundled Gemma 3 270M Q4_K_M and the tiny test gpt-oss):
- decode tokens/s through our worker + output parser + event path vs raw `Llama.generate`
  in-process on the same model, prompt, greedy sampling and thread count (goal ≥ 0.97), on a
  quiet machine and again while another process keeps one core busy (the bench starts it);
- reuse exactness: max |Δlogit| after rolling 1,000 of 2,000 tokens back, ours vs raw
  llama-cpp-python with a window cache that is not full-size (`bench/kv_reuse.py` has more);
- Stop during the evaluation of a 3,000-token prompt: how long until the worker says so;
- time to first token at turn 1 and turn N of a growing conversation, with our KV-cache reuse
  vs a full re-evaluation each turn (goal: turn-N / turn-1 ≤ 1.2 with reuse);
- cancel latency (goal ≤ 100 ms), model load time, the worker's peak memory, and the app
  side's idle memory without a model.
Runs one thing at a time (never two models computing at once): on 2 cores, parallel load
makes llama.cpp's spin-waiting threads collapse. Checked before printing (no figures otherwise,
exit status 1): every decode run, ours and raw, generated `--tokens` tokens; every turn of the
TTFT series generated its 32 tokens and reported a first token; each cancel was asked for.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.domain.events import GenerationDone, TokenStep
from app.domain.messages import Conversation, Message, Role
from app.domain.placement import LoadSettings
from app.domain.sampling import Sampling
from app.engine.local.client import WorkerClient
from app.engine.local.tokenizer import ModelTokenizer
from app.library.bundled import gemma_model_path
from app.templates.registry import get_template

GREEDY = Sampling(temperature=0.0)
WORDS = "the quick brown fox jumps over the lazy dog while the model keeps answering".split()  # noqa: SIM905


def fail(why: str) -> NoReturn:
    raise SystemExit(f"no figures: {why}")


def _spin(stop: Connection) -> None:
    while not stop.poll(0):
        pass


class BusyCore:
    """Another process keeping one core busy while the block runs."""

    def __enter__(self) -> BusyCore:
        ctx = mp.get_context("spawn")
        self._stop, child = ctx.Pipe()
        self._proc = ctx.Process(target=_spin, args=(child,), daemon=True)
        self._proc.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.send(True)
        self._proc.join()


def _raw_child(
    path: str, prompt: list[int], n: int, threads: int, gpu_layers: int, out: Connection
) -> None:
    import llama_cpp
    import llama_cpp.llama_cpp as low

    original = low.llama_model_default_params

    def params() -> object:
        p = original()
        p.use_extra_bufts = False  # the same model parameters our worker uses
        return p

    low.llama_model_default_params = params
    llm = llama_cpp.Llama(
        model_path=path,
        n_ctx=4096,
        n_threads=threads,
        n_threads_batch=threads,
        n_batch=256,
        n_gpu_layers=gpu_layers,
        verbose=False,
    )
    rates = []
    for _ in range(3):
        stamps = []
        for _token in llm.generate(
            prompt, temp=0.0, top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0, reset=True
        ):
            stamps.append(time.perf_counter())
            if len(stamps) >= n:
                break
        if len(stamps) != n:
            out.send(f"raw Llama.generate made {len(stamps)} of {n} tokens")
            return
        rates.append((len(stamps) - 1) / (stamps[-1] - stamps[0]))
    out.send(statistics.median(rates))


def raw_decode_rate(path: Path, prompt: list[int], n: int, threads: int, gpu_layers: int) -> float:
    """Tokens/s of raw `Llama.generate` (decode only: first to last token), in its own process
    like our worker, so the ratio shows the cost of our pipe, parser and events alone."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_raw_child, args=(str(path), prompt, n, threads, gpu_layers, child))
    proc.start()
    child.close()  # a child that dies then reads as EOF here, not as a wait for ever
    try:
        said = parent.recv()
    except EOFError:
        proc.join()
        raise SystemExit(f"the raw llama-cpp-python run died (exit code {proc.exitcode})") from None
    proc.join()
    if isinstance(said, str):
        fail(said)
    return float(said)


def our_decode_rate(client: WorkerClient, template_name: str, prompt: list[int], n: int) -> float:
    """Tokens/s through the worker, the pipe, the output parser and the events."""
    tok = ModelTokenizer(client)
    parser = get_template(template_name).output_parser(tok)
    stamps = []
    for event in client.generate(prompt, stop_ids=[], sampling=GREEDY, max_tokens=n):
        if isinstance(event, TokenStep):
            parser.feed(event.token)
            stamps.append(time.perf_counter())
    parser.finish()
    if len(stamps) != n:
        fail(f"our worker generated {len(stamps)} of {n} tokens")
    return (len(stamps) - 1) / (stamps[-1] - stamps[0])


def _turn_text(i: int, k: int) -> str:
    return " ".join(WORDS[(i + j) % len(WORDS)] for j in range(k))


def _user_turn(template_name: str, tok: ModelTokenizer, text: str) -> list[int]:
    """The ids a new user turn adds: its frame and the generation prompt (no BOS)."""
    ids = get_template(template_name).prompt_ids(
        Conversation(messages=(Message.of(Role.USER, text),)), tok
    )
    return ids[len(tok.bos_ids) :]


def ttft_series(client: WorkerClient, template_name: str, turns: int, reuse: bool) -> list[float]:
    """First-token latency (ms) per turn of an append-only conversation: each turn adds the
    model's own reply (32 tokens, generated) and a new user message of about 25 words."""
    tok = ModelTokenizer(client)
    close = tok.tokenize("<end_of_turn>\n", special=True) if template_name == "gemma" else [200007]
    prompt = tok.bos_ids + _user_turn(template_name, tok, _turn_text(0, 25))
    flush = tok.tokenize("Unrelated.", special=False) or [1]
    out = []
    for i in range(turns):
        if not reuse:  # push the conversation out of the cache: a server that re-reads history
            list(client.generate(flush, stop_ids=[], sampling=GREEDY, max_tokens=1))
        reply: list[int] = []
        for event in client.generate(prompt, stop_ids=[], sampling=GREEDY, max_tokens=32):
            if isinstance(event, TokenStep):
                reply.append(event.token)
            elif isinstance(event, GenerationDone):
                out.append(event.timings.first_token_ms)
        if len(reply) != 32 or len(out) != i + 1:
            fail(f"turn {i + 1} generated {len(reply)} of 32 tokens")
        prompt = prompt + reply + close + _user_turn(template_name, tok, _turn_text(i + 1, 25))
    return out


def cancel_latency(client: WorkerClient, prompt: list[int]) -> float:
    cancel = threading.Event()
    set_at = 0.0
    for event in client.generate(
        prompt, stop_ids=[], sampling=GREEDY, max_tokens=1500, cancel=cancel
    ):
        if isinstance(event, TokenStep) and not cancel.is_set() and event.t_ms > 200:
            set_at = time.perf_counter()
            cancel.set()
        if isinstance(event, GenerationDone):
            if not set_at:
                fail("the generation ended before the cancel was asked for")
            return (time.perf_counter() - set_at) * 1000
    fail("the generation never ended")


def prompt_cancel_latency(client: WorkerClient, n: int = 3000) -> tuple[float, int]:
    """Stop a third of the way into the evaluation of an `n`-token prompt: ms until the worker
    says it stopped, and how many prompt tokens it had evaluated whole (kept for the next turn)."""
    prompt = [1000 + (i * 7919) % 20000 for i in range(n)]
    client.logits([1, 2, 3])  # a cache with nothing in common
    start = time.perf_counter()
    client.logits(prompt)
    whole = time.perf_counter() - start
    client.logits([1, 2, 3])
    cancel, set_at, ended = threading.Event(), [0.0], float("nan")

    def stop() -> None:
        set_at[0] = time.perf_counter()
        cancel.set()

    threading.Timer(whole / 3, stop).start()
    for event in client.generate(prompt, stop_ids=[], sampling=GREEDY, max_tokens=4, cancel=cancel):
        if isinstance(event, GenerationDone):
            ended = time.perf_counter()
    if ended != ended:  # NaN: the worker never said it ended
        fail("the stopped prompt evaluation never ended")
    again = client.generate([*prompt[:-1], 5], stop_ids=[], max_tokens=1)
    done = [e for e in again if isinstance(e, GenerationDone)]
    return (ended - set_at[0]) * 1000, done[0].timings.prompt_reused


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def idle_app_rss_mib() -> float:
    code = (
        "import app.cli, app.engine.local.session, app.engine.local.client, app.harmony.parser;"
        "print([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1])"
    )
    return (
        int(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        / 1024
    )


def _decode(
    client: WorkerClient, path: Path, name: str, prompt: list[int], args: argparse.Namespace
) -> tuple[float, float]:
    ours = statistics.median(our_decode_rate(client, name, prompt, args.tokens) for _ in range(3))
    raw = statistics.median(
        raw_decode_rate(path, prompt, args.tokens, args.threads, args.gpu_layers) for _ in range(3)
    )
    return ours, raw


def bench_model(label: str, path: Path, template_name: str, args: argparse.Namespace) -> None:
    from bench.kv_reuse import ours as exact_ours
    from bench.kv_reuse import raw as exact_raw

    settings = LoadSettings(gpu_layers=args.gpu_layers)
    with WorkerClient() as client:
        info = client.load(path, n_ctx=4096, n_threads=args.threads, settings=settings)
        tok = ModelTokenizer(client)
        prompt = get_template(template_name).prompt_ids(
            Conversation(messages=(Message.of(Role.USER, "Tell me a long story about a fox."),)),
            tok,
        )
        quiet = _decode(client, path, template_name, prompt, args)
        with BusyCore():
            loaded = _decode(client, path, template_name, prompt, args)
        reuse = ttft_series(client, template_name, args.turns, reuse=True)
        full = ttft_series(client, template_name, args.turns, reuse=False)
        cancel = statistics.median(cancel_latency(client, prompt) for _ in range(3))
        stops = [prompt_cancel_latency(client) for _ in range(3)]
        peak = peak_rss_mib(client.pid or 0)
    exact = exact_ours(path, None, args.threads, 2000, 1000)[0]
    unchecked = exact_raw(path, False, args.threads, 2000, 1000)[0]
    n = args.turns
    where = info.placement.words() if info.placement else "CPU"
    print(f"\n== {label}: {path.name} ({info.architecture}), template {template_name}, on {where}")
    print(f"   {args.threads} thread(s), greedy, {args.tokens} tokens per decode run")
    print(f"{'measure':50}{'ours':>11}{'reference':>11}{'ratio':>8}")
    _row("decode tok/s, quiet (ours vs raw Llama.generate)", *quiet)
    _row("decode tok/s, one core busy (ours vs raw)", *loaded)
    _row("TTFT turn 1, ms (KV reuse vs full re-eval)", reuse[0], full[0])
    _row(f"TTFT turn {n}, ms (KV reuse vs full re-eval)", reuse[-1], full[-1])
    _row(
        f"TTFT turn {n} / turn 1 (goal <= 1.2 w/ reuse)",
        reuse[-1] / reuse[0],
        full[-1] / full[0],
        ratio=False,
    )
    _row(
        "max |dlogit| after a 1000-token rollback (ours vs raw, window cache not full)",
        exact,
        unchecked,
        ratio=False,
    )
    _row("cancel latency while decoding, ms (goal <= 100)", cancel)
    latency = statistics.median(s[0] for s in stops)
    _row("Stop during a 3000-token prompt, ms (goal <= 100)", latency)
    _row("  prompt tokens kept after that Stop", float(statistics.median(s[1] for s in stops)))
    _row("model load, ms", info.load_ms)
    _row("worker peak memory, MiB", peak)


def _row(label: str, ours: float, reference: float | None = None, *, ratio: bool = True) -> None:
    line = f"{label:50}{ours:>11.2f}"
    if reference is not None:
        line += f"{reference:>11.2f}"
        if ratio:
            line += f"{ours / reference:>8.2f}"
    print(line)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--only", choices=["gemma", "tiny"])
    ap.add_argument("--gpu-layers", type=int, default=0, help="-1: all (a GPU build)")
    args = ap.parse_args()
    print(f"app side idle memory without a model: {idle_app_rss_mib():.0f} MiB")
    if args.only != "tiny":
        bench_model("default model", gemma_model_path(), "gemma", args)
    if args.only != "gemma":
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from tests.tiny_gpt_oss import build

        bench_model("tiny gpt-oss (random weights)", build(), "harmony", args)


if __name__ == "__main__":
    main()
